# ngx_http_zklock_module and the nginx adapter, included from Makefile.am.
#
# nginx builds its modules itself, against a source tree configured as
# the nginx that loads them (Debian's nginx-dev ships one): nginx/build.sh
# runs that build into nginx-module/ and folds the adapter's object into
# libzklock-nginx.a. The module links libzklock.so.
NGINX_MODULE_FILES = nginx/config nginx/build.sh nginx/ngx_http_zklock.h \
	nginx/ngx_http_zklock_module.c nginx/ngx_http_zklock_request.c \
	nginx/ngx_http_zklock_cache.c nginx/ngx_http_zklock_group.c \
	nginx/ngx_http_zklock_variables.c \
	nginx/ngx_http_zklock_status.c adapters/nginx.c include/zklock_nginx.h
EXTRA_DIST += $(NGINX_MODULE_FILES) nginx/local.mk nginx/zklock.conf.example

if HAVE_NGINX
include_HEADERS += include/zklock_nginx.h
pkgconfig_DATA += adapters/zklock-nginx.pc
NGINX_ALL = nginx-module/ngx_http_zklock_module.so

nginx-module/ngx_http_zklock_module.so: libzklock.la $(NGINX_MODULE_FILES) include/zklock_version.h
	ZKL_NGINX_CFLAGS="$(CPPFLAGS) $(CFLAGS) $(NGINX_MODULE_CFLAGS)" \
	ZKL_NGINX_LDFLAGS="$(LDFLAGS) $(NGINX_MODULE_LDFLAGS)" \
	  bash $(srcdir)/nginx/build.sh $(srcdir) $(builddir) nginx-module $(NGINX_SRC) >/dev/null

install-exec-local: $(NGINX_ALL)
	$(MKDIR_P) $(DESTDIR)$(NGINX_MODULEDIR) $(DESTDIR)$(libdir)
	$(INSTALL_DATA) nginx-module/ngx_http_zklock_module.so $(DESTDIR)$(NGINX_MODULEDIR)/
	$(INSTALL_DATA) nginx-module/libzklock-nginx.a $(DESTDIR)$(libdir)/

uninstall-local:
	rm -f $(DESTDIR)$(NGINX_MODULEDIR)/ngx_http_zklock_module.so \
	  $(DESTDIR)$(libdir)/libzklock-nginx.a

clean-local:
	rm -rf nginx-module
else
NGINX_ALL =
endif
