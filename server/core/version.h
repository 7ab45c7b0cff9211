/* version.h - the release this tree builds. */
#ifndef HKV_VERSION_H
#define HKV_VERSION_H
#define HOTKVD_VERSION "0.1.0"
#endif
