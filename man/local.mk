# The man pages, included from Makefile.am.
#
# Section 1 (the tools) is hand-written roff. Section 3 is made from the
# public headers: man/NAME.3.in holds what a page adds to the header
# (summary, which parts of which header, EXAMPLES, SEE ALSO) and
# man/gen-man.py writes the rest from the header's comments, so a page
# cannot say anything the header does not. Every function a page
# documents besides its own name gets a one-line ".so" alias page at
# install time (man/aliases.sh reads the names from the pages' NAME
# sections), so "man zkl_lock_acquire" works. Nothing generated is kept
# in the tree.
dist_man_MANS = man/zklock.1 man/zklock-bench.1

MAN3_IN = \
	man/zklock.3.in \
	man/zkl_client_new.3.in \
	man/zkl_lock_new.3.in \
	man/zkl_rwlock_new.3.in \
	man/zkl_lease_new.3.in \
	man/zkl_multi_new.3.in \
	man/zkl_latch_new.3.in \
	man/zkl_lock_write.3.in \
	man/zkl_contenders.3.in \
	man/zkl_strerror.3.in \
	man/zkl_set_allocator.3.in \
	man/zkl_client_attach.3.in \
	man/zkl_libevent_attach.3.in \
	man/zkl_libuv_attach.3.in \
	man/zkl_libev_attach.3.in \
	man/zkl_glib_attach.3.in \
	man/zkl_sdevent_attach.3.in \
	man/zkl_nginx_attach.3.in \
	man/zkl_poll_attach.3.in

MAN3_OUT = \
	man/zklock.3 \
	man/zkl_client_new.3 \
	man/zkl_lock_new.3 \
	man/zkl_rwlock_new.3 \
	man/zkl_lease_new.3 \
	man/zkl_multi_new.3 \
	man/zkl_latch_new.3 \
	man/zkl_lock_write.3 \
	man/zkl_contenders.3 \
	man/zkl_strerror.3 \
	man/zkl_set_allocator.3 \
	man/zkl_client_attach.3 \
	man/zkl_libevent_attach.3 \
	man/zkl_libuv_attach.3 \
	man/zkl_libev_attach.3 \
	man/zkl_glib_attach.3 \
	man/zkl_sdevent_attach.3 \
	man/zkl_nginx_attach.3 \
	man/zkl_poll_attach.3

# Every header, whether its adapter is built or not: a page of each.
MAN3_HDRS = include/zklock.h include/zklock_poll.h \
	include/zklock_libevent.h include/zklock_libuv.h \
	include/zklock_libev.h include/zklock_glib.h include/zklock_sdevent.h \
	include/zklock_nginx.h

EXTRA_DIST += man/gen-man.py $(MAN3_IN) man/aliases.sh \
	test/test-man.sh test/test-examples.sh test/example-prelude.h

CLEANFILES = $(MAN3_OUT) man/stamp-man3

if BUILD_MAN
man_MANS = $(MAN3_OUT)

# One run writes every page: which page shows a declaration is decided
# over all the sources at once.
man/stamp-man3: $(MAN3_IN) $(MAN3_HDRS) man/gen-man.py
	$(AM_V_GEN)$(MKDIR_P) man && \
	$(PYTHON3) $(srcdir)/man/gen-man.py $(srcdir) man $(MAN3_IN) && \
	touch $@
$(MAN3_OUT): man/stamp-man3
	@test -f $@ || { rm -f man/stamp-man3 && \
	  $(MAKE) $(AM_MAKEFLAGS) man/stamp-man3; }

install-data-hook: man-install-aliases
uninstall-hook: man-uninstall-aliases

man-install-aliases:
	@$(NORMAL_INSTALL)
	$(MKDIR_P) '$(DESTDIR)$(man3dir)'
	@INSTALL_DATA='$(INSTALL_DATA)' $(SHELL) $(srcdir)/man/aliases.sh \
	  install . '$(DESTDIR)$(man3dir)' $(MAN3_OUT)

man-uninstall-aliases:
	@$(NORMAL_UNINSTALL)
	@$(SHELL) $(srcdir)/man/aliases.sh \
	  uninstall . '$(DESTDIR)$(man3dir)' $(MAN3_OUT)
endif
