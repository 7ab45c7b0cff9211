# hotkvd build.  `make` builds bin/hotkvd; `make test` installs what is missing,
# builds and runs every test; `make run` runs the daemon with the example config.
#
# Everything but server/main.c goes into one static library that the daemon and
# the tests link, so each module is testable without a running daemon.

CC       ?= cc
VARIANT  ?= release
BUILD    := build/$(VARIANT)
DEPS_OK  := build/.deps-ok

# msgpack-c 6 renamed its pkg-config module from msgpack to msgpack-c.
MSGPACK_PC := $(shell pkg-config --exists msgpack-c 2>/dev/null && echo msgpack-c || echo msgpack)
PKGS     := libevent libevent_pthreads sqlite3 $(MSGPACK_PC)

BASE_CFLAGS := -std=gnu11 -g -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter \
               -D_GNU_SOURCE -I. -MMD -MP
ifeq ($(VARIANT),asan)
OPT_CFLAGS  := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
OPT_LDFLAGS := -fsanitize=address,undefined
else
OPT_CFLAGS  := -O2
OPT_LDFLAGS :=
endif
CFLAGS  += $(BASE_CFLAGS) $(OPT_CFLAGS) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDFLAGS += $(OPT_LDFLAGS)
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm

# LIBSRC and ONLY narrow a build to some modules while others are mid-change:
#   make VARIANT=mine unit LIBSRC="proto/*.c" ONLY=resp
LIBSRC   ?= proto/*.c storage/*.c config/*.c server/*.c
LIB_SRC  := $(filter-out server/main.c,$(wildcard $(LIBSRC)))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB      := $(BUILD)/libhotkvd.a
BIN      := $(if $(filter release,$(VARIANT)),bin/hotkvd,$(BUILD)/hotkvd)

TEST_GLOB := $(if $(ONLY),$(foreach o,$(ONLY),tests/*/check_$(o).c),tests/unit/check_*.c tests/integration/check_*.c tests/fault/check_*.c)
TEST_SRC := $(wildcard $(TEST_GLOB))
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o) $(BUILD)/tests/runner.o $(if $(wildcard tests/harness.c),$(BUILD)/tests/harness.o)
TEST_BIN := $(BUILD)/hkvtest
TEST_LIBS := $(shell pkg-config --libs check 2>/dev/null)
SHIM     := $(BUILD)/tests/fault/stallfs.so

.PHONY: all deps run test unit integration asan valgrind clean clang fuzz
all: $(DEPS_OK) $(BIN)

# Installs exactly what is missing; a stamp keeps later builds from asking dpkg.
deps $(DEPS_OK): scripts/install-deps.sh
	@sh scripts/install-deps.sh
	@mkdir -p build && touch $(DEPS_OK)

$(BUILD)/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(BUILD)/server/main.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# One runner holds every Check suite; the suite list is generated from the file
# names (tests/<kind>/check_<name>.c defines Suite *<name>_suite(void)).
# Regenerated on every run, replaced only when the list changed (a file added
# or removed must change it even when no file is newer than it).
$(BUILD)/tests/suites.h: FORCE
	@mkdir -p $(dir $@)
	@for f in $(TEST_SRC); do k=$$(basename $$(dirname $$f)); n=$$(basename $$f .c); \
	  echo "SUITE($$k, $${n#check_})"; done > $@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@
FORCE:

$(BUILD)/tests/runner.o: tests/runner.c $(BUILD)/tests/suites.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(BUILD)/tests $(shell pkg-config --cflags check) -c -o $@ $<

$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(shell pkg-config --cflags check) -c -o $@ $<

$(TEST_BIN): $(TEST_OBJ) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(TEST_OBJ) $(LIB) $(TEST_LIBS) $(LDLIBS)

$(SHIM): tests/fault/stallfs.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -fPIC -shared -o $@ $< -ldl

FUZZ_SECONDS ?= 20
# The test run: unit suites, then the daemon-level suites against $(BIN), then
# a bounded fuzz pass when clang with libFuzzer is available.
test: $(DEPS_OK) $(BIN) $(TEST_BIN) $(if $(wildcard tests/fault/stallfs.c),$(SHIM))
	HOTKVD_BIN=$(abspath $(BIN)) HOTKVD_SHIM=$(abspath $(SHIM)) $(TEST_BIN) all

unit: $(DEPS_OK) $(TEST_BIN)
	$(TEST_BIN) unit

integration: $(DEPS_OK) $(BIN) $(TEST_BIN)
	HOTKVD_BIN=$(abspath $(BIN)) HOTKVD_SHIM=$(abspath $(SHIM)) $(TEST_BIN) integration

asan:
	$(MAKE) VARIANT=asan test

valgrind: $(DEPS_OK) $(TEST_BIN)
	CK_FORK=no valgrind -q --leak-check=full --error-exitcode=99 $(TEST_BIN) unit

clang:
	$(MAKE) VARIANT=clang CC=clang all $(BUILD:release=clang)/hkvtest

run: $(DEPS_OK) $(BIN)
	@mkdir -p data
	$(BIN) hotkvd.conf.example --dir ./data

clean:
	rm -rf build bin

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(BUILD)/server/main.d
