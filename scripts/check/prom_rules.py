#!/usr/bin/env python3
"""prom_rules.py - the shipped Prometheus rules and Grafana dashboard stay true (issue 30).

Checks:
  1. `promtool check rules docs/prometheus/hotkvd.rules.yml` (the PromQL parses,
     the rules are well formed) and `promtool test rules
     docs/prometheus/hotkvd.rules.test.yml` (the unit tests: each alert fires on
     its synthetic series and clears when they recover);
  2. every `hotkvd_...` metric the rules name (in expressions and annotations),
     the tests feed (input_series) and the dashboard mentions is a family of
     README.md's "Metrics (Prometheus)" table: the backticked names of the
     table's first column, exactly as exposed (counters with their `_total`); a
     histogram's series are `<name>_bucket`, `_sum` and `_count`, its bare name
     is no series;
  3. every `hotkvd:...` name an expression uses is recorded in the rules file;
  4. every alert has a test in which it fires and a later one in which it does
     not (the "clears" half);
  5. every query of the dashboard (docs/grafana/hotkvd.json: panel targets and
     query variables' label_values(...)) is one recording rule's name with at
     most a label selector, so promtool checked its PromQL; the panels use the
     `${datasource}` variable.
2-5 need no promtool and run first, after a self-test (made-up mistakes must
be refused); then 1.  Exits 1 with the reasons on any failure.  Only a missing
promtool is skipped (the note says so, exit 0 if 2-5 passed).

usage: prom_rules.py [ROOT] [--self-test]
  --self-test  run only the self-test (a made-up metric, a bare histogram, an
               unrecorded name, an untested alert and a raw PromQL panel query
               are refused); it also runs before every check
"""
import json
import os
import re
import shutil
import subprocess
import sys

try:
    import yaml
except ImportError:  # a python3 without PyYAML (a venv, pyenv): Debian's python3-yaml, if there
    if os.path.realpath(sys.executable) != os.path.realpath('/usr/bin/python3') and \
            os.access('/usr/bin/python3', os.X_OK) and os.environ.get('PROM_RULES_REEXEC') != '1':
        os.environ['PROM_RULES_REEXEC'] = '1'
        os.execv('/usr/bin/python3', ['/usr/bin/python3', os.path.abspath(__file__)] + sys.argv[1:])
    sys.exit('prom_rules: PyYAML is missing (Debian: apt-get install python3-yaml); '
             'it reads the rules and their tests')

RULES = 'docs/prometheus/hotkvd.rules.yml'
TESTS = 'docs/prometheus/hotkvd.rules.test.yml'
DASHBOARD = 'docs/grafana/hotkvd.json'
README = 'README.md'

METRIC = re.compile(r'(?<![\w:])(hotkvd_[a-z0-9_]*[a-z0-9])(?![\w:*{])')
RECORD = re.compile(r'(?<![\w:])(hotkvd:[A-Za-z0-9_:]+)')
STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
# A dashboard query: one recorded name, optionally {label matchers}.
SELECTOR = re.compile(r'^\s*(hotkvd:[A-Za-z0-9_:]+)\s*(\{[^{}]*\})?\s*$')
LABEL_VALUES = re.compile(r'^\s*label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$')


def readme_families(text):
    """{series name: family type} from the Metrics section's table."""
    m = re.search(r'^## Metrics \(Prometheus\)\n(.*?)(?=^## )', text, re.M | re.S)
    if not m:
        raise SystemExit('prom_rules: README.md has no "## Metrics (Prometheus)" section')
    names = {}
    for line in m.group(1).split('\n'):
        if not line.startswith('| `hotkvd_') and not line.startswith('| every'):
            continue
        cols = [c.strip() for c in line.replace('\\|', '\x00').split('|')[1:-1]]
        if len(cols) < 2:
            continue
        for n in re.findall(r'`(hotkvd_[a-z0-9_]+)`', cols[0]):
            if 'histogram' in cols[1]:
                names[n] = 'histogram'
                for suffix in ('_bucket', '_sum', '_count'):
                    names[n + suffix] = 'histogram series'
            else:
                names[n] = cols[1]
    if len(names) < 50:
        raise SystemExit('prom_rules: found only %d names in README.md\'s Metrics table; '
                         'has its layout changed?' % len(names))
    return names


def check_metric(name, where, families, errors):
    if name not in families:
        hint = ''
        if name + '_total' in families:
            hint = ' (the counter is %s_total)' % name
        elif name.endswith('_total') and name[:-6] in families:
            hint = ' (%s has no _total: not a counter)' % name[:-6]
        errors.append('%s names %s, which is not in README.md\'s Metrics table%s'
                      % (where, name, hint))
    elif families[name] == 'histogram':
        errors.append('%s names the histogram %s bare: its series are %s_bucket, _sum, _count'
                      % (where, name, name))


def rules_of(doc):
    for g in doc.get('groups') or []:
        for r in g.get('rules') or []:
            yield g.get('name'), r


def check_rules(doc, families, errors):
    """Names in the rules; returns (records, alerts)."""
    records, alerts = set(), []
    for _, r in rules_of(doc):
        if 'record' in r:
            records.add(r['record'])
        if 'alert' in r:
            alerts.append(r['alert'])
    for _, r in rules_of(doc):
        what = 'rule %s' % (r.get('record') or r.get('alert'))
        expr = STRING.sub('""', str(r.get('expr', '')))
        for n in METRIC.findall(expr):
            check_metric(n, what, families, errors)
        for n in RECORD.findall(expr):
            if n not in records:
                errors.append('%s uses %s, which no rule records' % (what, n))
        if 'alert' in r:
            labels = r.get('labels') or {}
            ann = r.get('annotations') or {}
            if labels.get('severity') not in ('critical', 'warning', 'info'):
                errors.append('%s has no severity label (critical, warning or info)' % what)
            for key in ('summary', 'description'):
                if not ann.get(key):
                    errors.append('%s has no %s annotation' % (what, key))
            for text in ann.values():
                for n in METRIC.findall(str(text)):
                    check_metric(n, what + "'s annotations", families, errors)
        elif not r['record'].startswith('hotkvd:'):
            errors.append('%s: recorded names start with hotkvd:' % what)
    return records, alerts


def parse_duration(s):
    total = 0
    for num, unit in re.findall(r'(\d+)(ms|s|m|h|d|w|y)', str(s)):
        total += int(num) * {'ms': 0.001, 's': 1, 'm': 60, 'h': 3600, 'd': 86400,
                             'w': 604800, 'y': 31536000}[unit]
    return total


def check_tests(doc, alerts, families, errors):
    fired, quiet = {}, {}
    for i, t in enumerate(doc.get('tests') or [], 1):
        for s in t.get('input_series') or []:
            m = re.match(r'\s*([A-Za-z_:][A-Za-z0-9_:]*)', s.get('series', ''))
            if m and not m.group(1).startswith('hotkvd:'):
                check_metric(m.group(1), 'test %d\'s input series' % i, families, errors)
        for a in t.get('alert_rule_test') or []:
            name, at = a.get('alertname'), parse_duration(a.get('eval_time'))
            if a.get('exp_alerts'):
                fired.setdefault(name, []).append(at)
            else:
                quiet.setdefault(name, []).append(at)
    for name in alerts:
        if name not in fired:
            errors.append('alert %s: no test in which it fires (%s)' % (name, TESTS))
        elif not any(q > min(fired[name]) for q in quiet.get(name, [])):
            errors.append('alert %s: no test in which it clears after firing (%s)' % (name, TESTS))
    for name in set(fired) | set(quiet):
        if name not in alerts:
            errors.append('%s tests alert %s, which the rules do not define' % (TESTS, name))


def dashboard_queries(dash):
    """(where, expr) for every panel target and query variable."""
    def walk(panels):
        for p in panels or []:
            yield p
            yield from walk(p.get('panels'))
    for p in walk(dash.get('panels')):
        for t in p.get('targets') or []:
            yield 'panel "%s" target %s' % (p.get('title'), t.get('refId')), t.get('expr', ''), p, t
    for v in (dash.get('templating') or {}).get('list') or []:
        if v.get('type') == 'query':
            q = v.get('query')
            q = q.get('query', '') if isinstance(q, dict) else q or ''
            m = LABEL_VALUES.match(q)
            yield 'variable $%s' % v.get('name'), (m.group(1) if m else q), None, None


def check_dashboard(dash, records, families, errors):
    variables = [v.get('name') for v in (dash.get('templating') or {}).get('list') or []]
    if 'datasource' not in variables:
        errors.append('%s: no "datasource" variable' % DASHBOARD)
    if not any(v in variables for v in ('instance', 'colo')):
        errors.append('%s: no instance or colo variable' % DASHBOARD)
    if not isinstance(dash.get('schemaVersion'), int) or not 30 <= dash['schemaVersion'] <= 39:
        errors.append('%s: schemaVersion %r is not one Grafana 9/10 reads (30..39)'
                      % (DASHBOARD, dash.get('schemaVersion')))
    n = 0
    for where, expr, panel, target in dashboard_queries(dash):
        n += 1
        m = SELECTOR.match(expr or '')
        if not m:
            errors.append('%s: query %r is not a recording rule\'s name (with at most a '
                          'selector): record it in %s' % (where, expr, RULES))
            continue
        if m.group(1) not in records:
            errors.append('%s: %s is not recorded in %s' % (where, m.group(1), RULES))
        for obj in (panel, target):
            if obj is not None and (obj.get('datasource') or {}).get('uid') != '${datasource}':
                errors.append('%s: datasource is not ${datasource}' % where)
    for where, text in [('dashboard', json.dumps(dash))]:
        for name in METRIC.findall(text):
            check_metric(name, where, families, errors)
    if n == 0:
        errors.append('%s: no queries found' % DASHBOARD)
    return n


def static_checks(rules, tests, dash, families):
    errors = []
    records, alerts = check_rules(rules, families, errors)
    check_tests(tests, alerts, families, errors)
    n = check_dashboard(dash, records, families, errors)
    return errors, records, alerts, n


def self_test(rules, tests, dash, families):
    """Made-up mistakes must be refused."""
    import copy
    cases = []
    r = copy.deepcopy(rules)
    r['groups'][0]['rules'].append({'record': 'hotkvd:bogus', 'expr': 'rate(hotkvd_no_such_thing_total[5m])'})
    cases.append(('a made-up metric in a rule', r, tests, dash))
    r = copy.deepcopy(rules)
    r['groups'][0]['rules'].append({'record': 'hotkvd:bogus', 'expr': 'hotkvd_command_duration_seconds'})
    cases.append(('a bare histogram name', r, tests, dash))
    r = copy.deepcopy(rules)
    r['groups'][-1]['rules'].append({'alert': 'HotkvdBogus', 'expr': 'hotkvd:not_recorded > 0',
                                     'labels': {'severity': 'warning'},
                                     'annotations': {'summary': 's', 'description': 'd'}})
    cases.append(('an unrecorded name and an untested alert', r, tests, dash))
    d = copy.deepcopy(dash)
    d['panels'][1]['targets'][0]['expr'] = 'sum(rate(hotkvd_commands_processed_total[5m]))'
    cases.append(('a raw PromQL panel query', rules, tests, d))
    for what, r, t, d in cases:
        errs = static_checks(r, t, d, families)[0]
        if not errs:
            print('prom_rules: self-test: %s was not refused' % what)
            return False
    print('prom_rules: self-test: a made-up metric, a bare histogram, an unrecorded name, '
          'an untested alert and a raw panel query refused')
    return True


def main(argv):
    args = [a for a in argv if not a.startswith('--')]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
    root = os.path.normpath(root)
    path = lambda p: os.path.join(root, p)
    with open(path(README), encoding='utf-8') as f:
        families = readme_families(f.read())
    with open(path(RULES), encoding='utf-8') as f:
        rules = yaml.safe_load(f)
    with open(path(TESTS), encoding='utf-8') as f:
        tests = yaml.safe_load(f)
    with open(path(DASHBOARD), encoding='utf-8') as f:
        dash = json.load(f)

    ok = self_test(rules, tests, dash, families)
    if '--self-test' in argv:
        return 0 if ok else 1
    errors, records, alerts, nq = static_checks(rules, tests, dash, families)
    for e in errors:
        print('prom_rules: ' + e)
    if errors or not ok:
        return 1
    print('prom_rules: %d records, %d alerts, %d dashboard queries; every metric named is in '
          'README.md\'s table (%d series names), every alert tested firing and clearing, every '
          'dashboard query a record' % (len(records), len(alerts), nq, len(families)))

    promtool = shutil.which('promtool') or ('/usr/bin/promtool' if os.access('/usr/bin/promtool', os.X_OK) else None)
    if promtool is None:
        print('prom_rules: promtool not installed: promtool check rules / test rules skipped')
        return 0
    for cmd in (['check', 'rules', RULES], ['test', 'rules', TESTS]):
        p = subprocess.run([promtool] + cmd, cwd=root, capture_output=True, text=True)
        if p.returncode != 0:
            sys.stdout.write(p.stdout + p.stderr)
            print('prom_rules: `promtool %s` failed (exit %d)' % (' '.join(cmd), p.returncode))
            return 1
        last = [l.strip() for l in (p.stdout + p.stderr).split('\n') if l.strip()][-1:]
        print('prom_rules: promtool %s: %s' % (' '.join(cmd), last[0] if last else 'ok'))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
