# The man pages, included from Makefile.am. The pages are hand-written
# man(7) roff; every function a page documents besides its own name gets
# a one-line ".so" alias page at install time (man/aliases.sh reads the
# names from the pages' NAME sections), so "man zkl_lock_acquire" works
# and nothing generated is kept in the tree or the tarball.
dist_man_MANS = \
	man/zklock.1 \
	man/zklock-bench.1 \
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
	man/zkl_poll_attach.3

# The alias script, and the tests of the pages and of every C example in
# them and in README.md (run by test/suite.sh like the other test/*.sh).
EXTRA_DIST += man/aliases.sh test/test-man.sh test/test-examples.sh \
	test/example-prelude.h

install-data-hook: man-install-aliases
uninstall-hook: man-uninstall-aliases

man-install-aliases:
	@$(NORMAL_INSTALL)
	$(MKDIR_P) '$(DESTDIR)$(man3dir)'
	@INSTALL_DATA='$(INSTALL_DATA)' $(SHELL) $(srcdir)/man/aliases.sh \
	  install $(srcdir) '$(DESTDIR)$(man3dir)' $(dist_man_MANS)

man-uninstall-aliases:
	@$(NORMAL_UNINSTALL)
	@$(SHELL) $(srcdir)/man/aliases.sh \
	  uninstall $(srcdir) '$(DESTDIR)$(man3dir)' $(dist_man_MANS)

