# Installing and packaging hotkvd; included by the Makefile.
#
#   make install [PREFIX=/usr/local] [DESTDIR=...]   binaries (hotkvd,
#        hotkvd-admin), unit, man pages,
#        docs, sysusers.d entry; the config and the logrotate snippet only
#        when none is there yet (an existing one is never replaced)
#   make uninstall [PREFIX=...] [DESTDIR=...]         removes what install put;
#        keeps the config and the logrotate snippet if they were edited, and
#        never touches the data (/var/lib/hotkvd)
#   make deb                                          ./hotkvd_VERSION_ARCH.deb
#   make man                                          the two man pages
#
# The version is defined once, in server/core/version.h; the package, the man
# pages and `hotkvd --version` all take it from there (`override`: not even
# `make VERSION=...` gives the package another one).  The installed files
# are written for the package's paths (/usr/bin/hotkvd, /etc/hotkvd,
# /lib/systemd/system, /usr/share/doc/hotkvd) and rewritten for others by
# $(PKG_PATHS) as they are installed.

PKG_DIR := scripts/packaging
override VERSION := $(shell sed -n 's/^[#]define HOTKVD_VERSION "\(.*\)"$$/\1/p' server/core/version.h)
ifeq ($(VERSION),)
$(error cannot read HOTKVD_VERSION from server/core/version.h)
endif
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null || echo unknown)
# Dates in the pages and the package are the last commit's, so a rebuild of
# the same commit gives the same files.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || date +%s)
export SOURCE_DATE_EPOCH
PKG_DATE := $(shell date -u -d @$(SOURCE_DATE_EPOCH) +%Y-%m-%d)

PREFIX      ?= /usr/local
DESTDIR     ?=
BINDIR      ?= $(PREFIX)/bin
SYSCONFDIR  ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
MANDIR      ?= $(PREFIX)/share/man
DOCDIR      ?= $(PREFIX)/share/doc/hotkvd
UNITDIR     ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d

PKG_PATHS = sed -e 's|/usr/bin/hotkvd|$(BINDIR)/hotkvd|g' \
                -e 's|/etc/hotkvd/|$(SYSCONFDIR)/hotkvd/|g' \
                -e 's|/etc/logrotate.d/hotkvd|$(SYSCONFDIR)/logrotate.d/hotkvd|g' \
                -e 's|/lib/systemd/system/hotkvd|$(UNITDIR)/hotkvd|g' \
                -e 's|/usr/share/doc/hotkvd|$(DOCDIR)|g'

MAN_DIR   := $(BUILD)/man
MAN_PAGES := $(MAN_DIR)/hotkvd.8 $(MAN_DIR)/hotkvd.conf.5
MKCONFMAN := $(BUILD)/mkconfman
# The installed config: the example (every directive at its default) with
# the data directory the unit makes writable.
PKG_CONF  := $(BUILD)/pkg/hotkvd.conf
PKG_ROOT  := $(BUILD)/pkg/deb
PKG_STAGE := $(PKG_ROOT)/debian/hotkvd
DEB_FILE  := $(BUILD)/pkg/hotkvd_$(VERSION)_$(DEB_ARCH).deb
PKG_FILES := $(wildcard $(PKG_DIR)/*) scripts/hotkvd.service hotkvd.conf.example README.md

.PHONY: install uninstall deb man
man: $(MAN_PAGES)

$(MKCONFMAN): $(BUILD)/scripts/packaging/mkconfman.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(MAN_DIR)/hotkvd.conf.5: $(PKG_DIR)/hotkvd.conf.5.in $(MKCONFMAN) server/core/version.h
	@mkdir -p $(dir $@)
	$(MKCONFMAN) < $< | sed -e 's/@VERSION@/$(VERSION)/g' -e 's/@DATE@/$(PKG_DATE)/g' > $@.tmp
	@mv $@.tmp $@

$(MAN_DIR)/hotkvd.8: $(PKG_DIR)/hotkvd.8.in server/core/version.h
	@mkdir -p $(dir $@)
	sed -e 's/@VERSION@/$(VERSION)/g' -e 's/@DATE@/$(PKG_DATE)/g' $< > $@

$(PKG_CONF): hotkvd.conf.example
	@mkdir -p $(dir $@)
	sed 's|^dir \.$$|dir /var/lib/hotkvd|' $< > $@.tmp
	@grep -qx 'dir /var/lib/hotkvd' $@.tmp || { echo "$@: no 'dir .' line to set"; exit 1; }
	@mv $@.tmp $@

# Installs a file unless one is there already, which is kept as it is.
define install_keep
@if [ -e $(2) ]; then echo "install: keeping $(2) (not replaced)"; \
 else echo "install -m 0644 $(1) $(2)"; install -m 0644 $(1) $(2); fi
endef
# Removes an installed file only if it is still what install put there.
define uninstall_keep
@if [ -e $(2) ] && ! cmp -s $(1) $(2); then echo "uninstall: keeping $(2) (edited)"; \
 else rm -f $(2); fi
endef

install: $(BIN) $(ADMIN_BIN) $(MAN_PAGES) $(PKG_CONF)
	install -d -m 0755 $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(MANDIR)/man8 \
	    $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(SYSCONFDIR)/hotkvd \
	    $(DESTDIR)$(SYSCONFDIR)/logrotate.d
	install -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/hotkvd
	install -m 0755 $(ADMIN_BIN) $(DESTDIR)$(BINDIR)/hotkvd-admin
	$(PKG_PATHS) scripts/hotkvd.service > $(DESTDIR)$(UNITDIR)/hotkvd.service
	$(PKG_PATHS) $(MAN_DIR)/hotkvd.8 > $(DESTDIR)$(MANDIR)/man8/hotkvd.8
	$(PKG_PATHS) $(MAN_DIR)/hotkvd.conf.5 > $(DESTDIR)$(MANDIR)/man5/hotkvd.conf.5
	chmod 0644 $(DESTDIR)$(UNITDIR)/hotkvd.service $(DESTDIR)$(MANDIR)/man8/hotkvd.8 \
	    $(DESTDIR)$(MANDIR)/man5/hotkvd.conf.5
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/README.md
	install -m 0644 hotkvd.conf.example $(DESTDIR)$(DOCDIR)/examples/hotkvd.conf.example
	$(if $(SYSUSERSDIR),install -d -m 0755 $(DESTDIR)$(SYSUSERSDIR))
	$(if $(SYSUSERSDIR),install -m 0644 $(PKG_DIR)/hotkvd.sysusers $(DESTDIR)$(SYSUSERSDIR)/hotkvd.conf)
	$(call install_keep,$(PKG_CONF),$(DESTDIR)$(SYSCONFDIR)/hotkvd/hotkvd.conf)
	$(call install_keep,$(PKG_DIR)/hotkvd.logrotate,$(DESTDIR)$(SYSCONFDIR)/logrotate.d/hotkvd)

uninstall: $(PKG_CONF)
	rm -f $(DESTDIR)$(BINDIR)/hotkvd $(DESTDIR)$(BINDIR)/hotkvd-admin \
	    $(DESTDIR)$(UNITDIR)/hotkvd.service \
	    $(DESTDIR)$(MANDIR)/man8/hotkvd.8 $(DESTDIR)$(MANDIR)/man5/hotkvd.conf.5 \
	    $(DESTDIR)$(DOCDIR)/README.md $(DESTDIR)$(DOCDIR)/examples/hotkvd.conf.example \
	    $(if $(SYSUSERSDIR),$(DESTDIR)$(SYSUSERSDIR)/hotkvd.conf)
	@rmdir $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR) 2>/dev/null || true
	$(call uninstall_keep,$(PKG_CONF),$(DESTDIR)$(SYSCONFDIR)/hotkvd/hotkvd.conf)
	$(call uninstall_keep,$(PKG_DIR)/hotkvd.logrotate,$(DESTDIR)$(SYSCONFDIR)/logrotate.d/hotkvd)
	@rmdir $(DESTDIR)$(SYSCONFDIR)/hotkvd 2>/dev/null || true
	@echo "uninstall: the data directory /var/lib/hotkvd and the user hotkvd are left alone"

# The package: `make install` into a staging tree with the package's paths,
# then what Debian adds (stripped binary, compressed pages and changelog,
# copyright, maintainer scripts, conffiles, md5sums) and dpkg-deb.  The
# library dependencies are dpkg-shlibdeps's reading of the binary, so they
# name the Debian packages that hold the libraries it was linked against.
deb: $(DEB_FILE)
	cp $(DEB_FILE) .
	@echo "built ./$(notdir $(DEB_FILE))"

$(DEB_FILE): $(BIN) $(ADMIN_BIN) $(MAN_PAGES) $(PKG_CONF) $(PKG_FILES)
	rm -rf $(PKG_ROOT)
	@mkdir -p $(PKG_STAGE)
	umask 022 && $(MAKE) --no-print-directory install DESTDIR=$(abspath $(PKG_STAGE)) \
	    PREFIX=/usr UNITDIR=/lib/systemd/system SYSUSERSDIR= >/dev/null
	strip --strip-unneeded --remove-section=.comment --remove-section=.note \
	    $(PKG_STAGE)/usr/bin/hotkvd $(PKG_STAGE)/usr/bin/hotkvd-admin
	gzip -9n $(PKG_STAGE)/usr/share/man/man8/hotkvd.8 $(PKG_STAGE)/usr/share/man/man5/hotkvd.conf.5
	sed -e 's/@VERSION@/$(VERSION)/g' \
	    -e "s/@RFC2822DATE@/$$(date -u -R -d @$(SOURCE_DATE_EPOCH))/" $(PKG_DIR)/changelog.in \
	    | gzip -9n > $(PKG_STAGE)/usr/share/doc/hotkvd/changelog.gz
	install -m 0644 $(PKG_DIR)/copyright $(PKG_STAGE)/usr/share/doc/hotkvd/copyright
	install -d -m 0755 $(PKG_STAGE)/DEBIAN
	install -m 0755 $(PKG_DIR)/postinst $(PKG_DIR)/prerm $(PKG_DIR)/postrm $(PKG_STAGE)/DEBIAN/
	install -m 0644 $(PKG_DIR)/conffiles $(PKG_STAGE)/DEBIAN/conffiles
	printf 'Source: hotkvd\n\nPackage: hotkvd\nArchitecture: any\n' > $(PKG_ROOT)/debian/control
	cd $(PKG_ROOT) && dpkg-shlibdeps -O debian/hotkvd/usr/bin/hotkvd \
	    debian/hotkvd/usr/bin/hotkvd-admin > shlibs.txt
	sed -e 's/@VERSION@/$(VERSION)/' -e 's/@ARCH@/$(DEB_ARCH)/' \
	    -e "s/@DEPENDS@/$$(sed -n 's/^shlibs:Depends=//p' $(PKG_ROOT)/shlibs.txt)/" \
	    -e "s/@SIZE@/$$(du -sk --apparent-size --exclude=DEBIAN $(PKG_STAGE) | cut -f1)/" \
	    $(PKG_DIR)/control.in > $(PKG_STAGE)/DEBIAN/control
	cd $(PKG_STAGE) && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z \
	    | xargs -0 md5sum > DEBIAN/md5sums
	chmod 0644 $(PKG_STAGE)/DEBIAN/md5sums
	dpkg-deb --root-owner-group -Zxz --build $(PKG_STAGE) $@
