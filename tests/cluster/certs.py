"""certs.py - the cluster's certificates for the tests, made with `openssl`
into the test's temp dir: one CA, and one certificate per host signed by it
with CN = the host name and subjectAltName = DNS:<host>, IP:<its address>,
usable for both ends of a mutual-TLS link (serverAuth, clientAuth).  EC
P-256 keys: fast to make, and what an operator would choose today."""

import os

from netns import run

OPENSSL = "/usr/bin/openssl"


class Certs:
    def __init__(self, tmp):
        self.dir = os.path.join(tmp, "certs")
        os.makedirs(self.dir, exist_ok=True)
        self.ca = os.path.join(self.dir, "ca.crt")
        self.ca_key = os.path.join(self.dir, "ca.key")
        run([OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-nodes", "-keyout", self.ca_key, "-out", self.ca, "-days", "3",
             "-subj", "/CN=hotkvd-test-cluster-ca"], timeout=30)

    def host(self, name, addr, tag=None):
        """(cert, key) for host `name` at `addr` (tag: a file name other than
        the host's, for a second certificate of one name)."""
        base = os.path.join(self.dir, tag or name)
        key, csr, crt, ext = base + ".key", base + ".csr", base + ".crt", base + ".ext"
        with open(ext, "w") as f:
            f.write("subjectAltName=DNS:%s,IP:%s\n"
                    "extendedKeyUsage=serverAuth,clientAuth\n"
                    "keyUsage=digitalSignature,keyEncipherment\n" % (name, addr))
        run([OPENSSL, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", key, "-out", csr, "-subj", "/CN=%s" % name], timeout=30)
        run([OPENSSL, "x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", self.ca_key,
             "-CAcreateserial", "-out", crt, "-days", "3", "-extfile", ext], timeout=30)
        return crt, key
