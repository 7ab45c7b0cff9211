/*
 * hotkvd_admin.c - the `hotkvd-admin` program: a cluster's status and its
 * leaves (list, split, move) as etcd (or a single host's agent) holds them,
 * for operators.  A second program built from the same library as the
 * daemon; everything it does is in server/admin/ (admin.h lists the lines it
 * prints).
 */
#include "server/admin/admin.h"

int main(int argc, char **argv)
{
    return admin_main(argc, argv);
}
