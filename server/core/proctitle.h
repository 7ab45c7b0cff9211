/*
 * proctitle.h - the process title `ps` shows ("hotkvd: edge a/0"), set the way
 * nginx and PostgreSQL do: argv's memory is reused for the title after the
 * environment it is followed by has been copied elsewhere.
 */
#ifndef HKV_PROCTITLE_H
#define HKV_PROCTITLE_H

/* Call first thing in main(), before anything reads argv or environ again;
 * argv strings stay valid (they are copied too). */
void proctitle_init(int argc, char **argv);
/* Sets the title (and the 15-byte comm name for top/pgrep). */
void proctitle_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
