/* cluster_certs.h - certificates for tests of links between hosts, made
 * with the openssl command line into a test's temp dir (through h_run):
 *
 *   ca.crt             the cluster CA (what cluster-tls-ca-file names)
 *   h1.crt/.key        CN=h1, signed by the cluster CA
 *   h2.crt/.key        CN=h2, signed by the cluster CA
 *   san.crt/.key       CN=other, subjectAltName DNS:h2, signed by the cluster CA
 *   rogue-ca.crt       another CA, trusted by nobody
 *   rogue-h1/h2.crt    CN=h1 / CN=h2, signed by the rogue CA
 *
 * P-256 keys, valid two days.  Header-only: each suite includes it once,
 * after tests/harness.h (h_run; harness.h is not include-guarded whole). */
#ifndef HKV_TEST_CLUSTER_CERTS_H
#define HKV_TEST_CLUSTER_CERTS_H

#include <check.h>
#include <stdio.h>
#include <string.h>

static inline void cc_run(const char *dir, const char *cmd)
{
    char sh[2048], out[4096];
    snprintf(sh, sizeof(sh), "cd '%s' && %s", dir, cmd);
    char *argv[] = {"/bin/sh", "-c", sh, NULL};
    int rc = h_run(argv, NULL, out, sizeof(out), 30000);
    ck_assert_msg(rc == 0, "'%s' failed (%d): %s", cmd, rc, out);
}

/* A key and a CSR for subject `cn` into <name>.key / <name>.csr, then the
 * certificate <name>.crt signed by <ca>.crt/<ca>.key, with a
 * subjectAltName extension when san is not "" ("DNS:h2"). */
static inline void cc_cert(const char *dir, const char *name, const char *cn, const char *ca,
                           const char *san)
{
    char cmd[1024];
    if (san[0] != '\0') {
        snprintf(cmd, sizeof(cmd), "printf 'subjectAltName=%s\\n' > %s.ext", san, name);
        cc_run(dir, cmd);
    }
    snprintf(cmd, sizeof(cmd),
             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout %s.key -out %s.csr -subj /CN=%s 2>&1 && "
             "openssl x509 -req -in %s.csr -CA %s.crt -CAkey %s.key -CAcreateserial "
             "-out %s.crt -days 2%s%s%s 2>&1",
             name, name, cn, name, ca, ca, name, san[0] ? " -extfile " : "",
             san[0] ? name : "", san[0] ? ".ext" : "");
    cc_run(dir, cmd);
}

static inline void cc_ca(const char *dir, const char *name)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout %s.key -out %s.crt -subj /CN=%s -days 2 2>&1",
             name, name, name);
    cc_run(dir, cmd);
}

/* Every file listed at the top, in dir. */
static inline void cc_make_all(const char *dir)
{
    cc_ca(dir, "ca");
    cc_ca(dir, "rogue-ca");
    cc_cert(dir, "h1", "h1", "ca", "");
    cc_cert(dir, "h2", "h2", "ca", "");
    cc_cert(dir, "san", "other", "ca", "DNS:h2");
    cc_cert(dir, "rogue-h1", "h1", "rogue-ca", "");
    cc_cert(dir, "rogue-h2", "h2", "rogue-ca", "");
}

#endif
