#!/usr/bin/python3
"""Model-check the leaf move protocol (move.pml) and replicas (replica.pml) with Spin.

Each run builds one configuration in a temporary directory (spin -a, gcc, ./pan) and
checks the expected outcome: the correct model verifies with no error over the whole
bounded state space; each broken variant gives a counterexample that names the
invariant it breaks.  Prints, per run, the states stored and the time; exits 1 if an
expectation fails, 2 if Spin or gcc is missing or fails.

    run.py                bounded: the correct model and the variants (make test)
    run.py --long         bigger bounds for the correct model, the variants, and
                          the probes (make model)
    run.py --probes       only the probes: situations the correct model must reach
    run.py --trail NAME   a variant's counterexample, one line per step
    run.py --model replica   only one model (move, replica; default: both)
"""

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# The bounded configuration (make test): edge 0 writes, edge 1 reads, one operation
# each, one move attempt, one fault of any kind.
BOUNDED = ["-DROLES", "-DOPS=1", "-DMAXMOVES=1", "-DFAULTS=1"]

# make model: the correct model under bigger bounds, each run a full search (the
# longest first, so that the two workers finish together).
LONG = [
    ("two-ops", ["-DROLES", "-DOPS=2", "-DMAXMOVES=1", "-DFAULTS=1"]),
    ("both-roles", ["-DOPS=1", "-DMAXMOVES=1", "-DFAULTS=1"]),
    ("both-roles-two-faults", ["-DOPS=1", "-DMAXMOVES=1", "-DFAULTS=2"]),
    ("two-faults", ["-DROLES", "-DOPS=1", "-DMAXMOVES=1", "-DFAULTS=2"]),
    ("two-moves", ["-DROLES", "-DOPS=1", "-DMAXMOVES=2", "-DFAULTS=1"]),
]

# Broken variants: (macro, the invariant it is caught breaking, gcc optimisation: most
# are found within a few thousand states, where compiling fast matters more).  The
# first five are the ones issue 15 names; the last two show that the I2 and I5 checks
# can fail.
VARIANTS = [
    ("NO_FENCE", "I1", "-O0"),
    ("ACK_BEFORE_COMMIT", "I1", "-O0"),
    ("DROP_ON_LINK_LOSS", "I1", "-O0"),
    ("NO_GAP_CHECK", "I1", "-O0"),
    ("READS_IN_DOUBT", "I4", "-O1"),
    ("RESUME_IN_DOUBT", "I2", "-O0"),
    ("NO_RELEASE_ON_RESTART", "I5", "-O0"),
]

NPROBES = 14

# replica.pml (issue 27, CLUSTER.md section 7).  Bounded (make test): 2 writes, 2 tries
# in all, one fault (the primary crashes or is cut from etcd, or an isr add's answer is
# lost), 1 isr CAS.
R_BOUNDED = ["-DNR=2", "-DTRIES=2", "-DFAULTS=1", "-DMAX_ISRCAS=1"]
# make model: two faults (two crashes: a second failover after the old primary came
# back; or a crash and a cut; no lost CAS answer there), 3 tries.
R_LONG = [
    ("two-faults", ["-DNR=2", "-DTRIES=2", "-DFAULTS=2", "-DMAX_CRASH=2", "-DMAX_ISRCAS=2",
                    "-DMAX_UNKNOWN=0"]),
    ("three-tries", ["-DNR=2", "-DTRIES=3", "-DFAULTS=1", "-DMAX_ISRCAS=2"]),
]
# (defines, the invariant the counterexample breaks, gcc optimisation, bounds).  The
# five of issue 27 first, then the ones that show what CLUSTER.md section 7 leaves open
# (README "What the model found").  With ONLY_R1 (make model) a variant's own rule's
# assertion is left out, and the acknowledged write it loses shows.
R_VARIANTS = [
    (["-DACK_BEFORE_FOLLOWER"], "R1", "-O0", R_BOUNDED),
    (["-DSHRINK_WITHOUT_CAS"], "R6", "-O0", R_BOUNDED),
    (["-DPROMOTE_OUT_OF_SYNC"], "R5", "-O0", R_BOUNDED),
    (["-DNO_FENCE_OLD_PRIMARY"], "R3", "-O0", R_BOUNDED),
    (["-DRECORDS_NOT_REPLICATED"], "R4", "-O0", R_BOUNDED),
    (["-DDROP_WHOLE_ON_FAILOVER"], "R1", "-O0", R_BOUNDED),
    (["-DNO_TRUNCATE"], "R3", "-O0", R_BOUNDED),
    (["-DRECORD_ANSWER_EARLY"], "R1", "-O0", R_BOUNDED),
    # two isr CASes: found within a thousand states (with one, after 370 thousand)
    (["-DADD_COUNTS_AFTER_CAS"], "R1", "-O0", R_BOUNDED[:3] + ["-DMAX_ISRCAS=2"]),
    (["-DDROP_ADD_IN_DOUBT"], "R1", "-O1", R_BOUNDED),
]
# make model only: the ONLY_R1 twins, and a variant that needs two faults.
R_LONG_VARIANTS = [
    (["-DSHRINK_WITHOUT_CAS", "-DONLY_R1"], "R1", "-O0", R_BOUNDED),
    (["-DPROMOTE_OUT_OF_SYNC", "-DONLY_R1"], "R1", "-O1", R_BOUNDED),
    (["-DNO_FENCE_OLD_PRIMARY", "-DONLY_R1"], "R1", "-O1", R_BOUNDED),
    (["-DNO_TRUNCATE", "-DONLY_R1"], "R1", "-O1", R_BOUNDED),
    (["-DSAME_OWNER_RESUMES"], "R3", "-O2", R_LONG[0][1]),
    (["-DTRUNCATE_TO_START"], "R3", "-O2", R_LONG[0][1]),
]
R_NPROBES = 9

MODELS = {
    "move": {"file": "move.pml", "bounded": BOUNDED, "long": LONG, "opt": "-O1",
             "variants": [(["-D" + m], inv, opt, BOUNDED) for m, inv, opt in VARIANTS],
             "long_variants": [], "nprobes": NPROBES},
    "replica": {"file": "replica.pml", "bounded": R_BOUNDED, "long": R_LONG, "opt": "-O2",
                "variants": R_VARIANTS, "long_variants": R_LONG_VARIANTS,
                "nprobes": R_NPROBES},
}


class Result:
    def __init__(self, name):
        self.name = name
        self.errors = None
        self.states = None
        self.seconds = None
        self.violated = None
        self.complete = True
        self.output = ""
        self.failure = None     # why the run itself did not work
        self.trail = None


def run_pan(model, name, defines, opt, pan_args, keep_trail=False, collapse=False):
    """Builds and runs one configuration of model (a .pml file name); returns a Result."""
    res = Result(name)
    work = tempfile.mkdtemp(prefix="hkv-model-")
    try:
        shutil.copy(os.path.join(HERE, model), work)
        steps = [
            ["spin", "-a"] + defines + [model],
            ["gcc", opt, "-DSAFETY", "-DMEMLIM=6000", "-w", "-o", "pan", "pan.c"] +
            (["-DCOLLAPSE"] if collapse else []),
        ]
        for cmd in steps:
            p = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=900)
            if p.returncode != 0:
                res.failure = "%s failed:\n%s%s" % (cmd[0], p.stdout[-2000:], p.stderr[-2000:])
                return res
        t0 = time.monotonic()
        p = subprocess.run(["./pan"] + pan_args, cwd=work, capture_output=True, text=True,
                           timeout=3600)
        res.seconds = time.monotonic() - t0
        out = p.stdout + p.stderr
        res.output = out
        m = re.search(r"errors: (\d+)", out)
        res.errors = int(m.group(1)) if m else None
        m = re.search(r"(\d+) states, stored", out)
        res.states = int(m.group(1)) if m else None
        m = re.search(r"pan: elapsed time ([\d.e+]+)", out)
        if m:
            res.seconds = float(m.group(1))
        m = re.search(r"assertion violated \(+!?\(*([IR]\d)\b", out)
        if m:
            res.violated = m.group(1)
        elif "assertion violated" in out:
            res.violated = "probe"
        elif "invalid end state" in out:
            res.violated = "I5 (invalid end state)"
        if "reached -DMEMLIM bound" in out or "max search depth too small" in out:
            res.complete = False
        if res.errors is None:
            res.failure = "pan gave no verdict:\n" + out[-2000:]
        if keep_trail and os.path.exists(os.path.join(work, model + ".trail")):
            p = subprocess.run(["spin", "-t", "-p"] + defines + [model], cwd=work,
                               capture_output=True, text=True, timeout=300)
            res.trail = p.stdout
    except subprocess.TimeoutExpired as e:
        res.failure = "timed out: %s" % (e.cmd,)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return res


def describe(res):
    states = "%d states" % res.states if res.states is not None else "? states"
    secs = "%.1f s" % res.seconds if res.seconds is not None else "? s"
    return "%s, %s" % (states, secs)


def condensed_trail(model, text):
    """One line per step of a spin -t -p listing: step, process, the model's line."""
    lines = open(os.path.join(HERE, model)).read().split("\n")
    out = []
    last = None
    for line in text.split("\n"):
        m = re.match(r"\s*(\d+):\s+proc\s+(\d+) \((\w+):\d+\) [\w.]+\.pml:(\d+) ", line)
        if not m:
            if "assertion violated" in line:
                out.append("   => " + line.strip()[:160])
            continue
        step, proc, ln = m.group(1), m.group(3) + m.group(2), int(m.group(4))
        if (step, proc) == last:
            continue
        last = (step, proc)
        src = lines[ln - 1].strip() if 0 < ln <= len(lines) else ""
        out.append("%4s %-8s %4d  %s" % (step, proc, ln, src[:100]))
    return "\n".join(out)


def variant_name(defines):
    return "+".join(d[2:] for d in defines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--long", action="store_true", help="bigger bounds, and the probes")
    ap.add_argument("--probes", action="store_true", help="only the probes")
    ap.add_argument("--trail", metavar="VARIANT", help="print a variant's counterexample")
    ap.add_argument("--model", choices=sorted(MODELS), help="only this model")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()

    for tool in ("spin", "gcc"):
        if shutil.which(tool) is None:
            print("model: %s not found (scripts/install-deps.sh installs spin)" % tool)
            return 2

    models = [args.model] if args.model else ["move", "replica"]

    if args.trail:
        for name in models:
            spec = MODELS[name]
            for defs, _, _, bounds in spec["variants"] + spec["long_variants"]:
                if variant_name(defs) == args.trail:
                    break
            else:
                continue
            # the shortest (-i), except for the two-fault variant: its first is enough
            short = [] if (defs, bounds) in [(d, b) for d, _, _, b in
                                              spec["long_variants"] if "-DFAULTS=2" in b] \
                else ["-i"]
            res = run_pan(spec["file"], args.trail, bounds + defs, "-O1",
                          ["-m100000"] + short, keep_trail=True)
            if res.failure or not res.trail:
                print("model: no counterexample for %s" % args.trail)
                print(res.failure or res.output[-2000:])
                return 1
            print(condensed_trail(spec["file"], res.trail))
            return 0
        print("model: no variant %s (names: MACRO or MACRO+ONLY_R1)" % args.trail)
        return 1

    # (model file, label, defines, optimisation, pan arguments, expectation)
    jobs = []
    for name in models:
        spec = MODELS[name]
        pml = spec["file"]
        if not args.probes:
            if args.long:
                for label, defs in spec["long"]:
                    jobs.append((pml, "%s correct %s" % (name, label), defs, "-O2",
                                 ["-m100000", "-w26"], "verify"))
            else:
                jobs.append((pml, "%s correct" % name, spec["bounded"], spec["opt"],
                             ["-m10000"], "verify"))
            variants = spec["variants"] + (spec["long_variants"] if args.long else [])
            for defs, inv, opt, bounds in variants:
                jobs.append((pml, "%s %s" % (name, variant_name(defs)), bounds + defs, opt,
                             ["-m10000"], inv))
        if args.probes or args.long:
            for n in range(1, spec["nprobes"] + 1):
                jobs.append((pml, "%s probe %d" % (name, n),
                             spec["bounded"] + ["-DPROBE=%d" % n], "-O0", ["-m10000"],
                             "reach"))
    # The longest first, so that the workers finish together.
    jobs.sort(key=lambda j: 0 if j[5] == "verify" else 1)

    t0 = time.monotonic()
    failed = 0
    broken = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        futs = [(j, ex.submit(run_pan, j[0], j[1], j[2], j[3], j[4], False, args.long))
                for j in jobs]
        for (_, label, defs, _, _, expect), fut in futs:
            res = fut.result()
            if res.failure:
                print("model %s: FAILED to run: %s" % (label, res.failure))
                broken += 1
                continue
            if expect == "verify":
                ok = res.errors == 0 and res.complete
                verdict = "verified, errors: 0" if ok else (
                    "NOT verified: errors: %d%s%s" % (res.errors, "" if res.complete else
                                                      ", search incomplete",
                                                      "" if not res.violated else
                                                      ", " + res.violated))
            elif expect == "reach":
                ok = res.errors >= 1 and res.violated == "probe"
                verdict = "reached" if ok else "NOT reached (a fault path left out)"
            else:
                ok = res.errors >= 1 and res.violated == expect
                verdict = ("counterexample, %s violated" % res.violated if ok else
                           "expected a counterexample breaking %s, got errors: %s (%s)" %
                           (expect, res.errors, res.violated))
            print("model %-40s %-38s %s" % (label + ":", verdict, describe(res)))
            if not ok:
                failed += 1
                if expect == "verify":
                    print(res.output[-3000:])
    print("model: %d runs, %d failed, %.1f s" % (len(jobs), failed + broken,
                                                 time.monotonic() - t0))
    if broken:
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
