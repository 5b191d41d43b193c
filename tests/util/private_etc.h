/*
 * tests/util/private_etc.h — a private /etc for tests that change the
 * system-wide by-name setting (/etc/ld.so.preload, /etc/ltr): the test
 * process moves into a mount namespace of its own, where an overlay over
 * /etc takes every write into a scratch directory. The machine's /etc, and
 * every other test running beside, never see them. Needs root.
 */
#ifndef LTR_TEST_PRIVATE_ETC_H
#define LTR_TEST_PRIVATE_ETC_H

/* Call once, first thing in main, while single-threaded. 0, or -1 with the
 * reason printed (not root, no overlayfs): the caller skips its tests. The
 * scratch directory goes when the process exits. Also lets AddressSanitizer
 * programs start with a library in /etc/ld.so.preload
 * (verify_asan_link_order=0), as docs/heap-tracing.md tells users. */
int tu_private_etc(void);
/* Empties the overlay's writes: /etc is the machine's again (in this
 * namespace), for a test that must start from the real state. */
int tu_private_etc_reset(void);
/* A copy of the build's ltr and its libraries (TU_PRIVATE_INSTALL/bin/ltr
 * and lib/) in the private /etc, root's alone on its whole way from "/":
 * what `ltr boottrace` and `ltr heaptracingconfig` accept to run or copy
 * as root (prim's ltr_open_roots_alone), wherever the build tree is (under
 * /tmp, in a user's home: both refused). Made when missing (after
 * tu_private_etc_reset too); returns the path of its bin/ltr, or NULL. */
#define TU_PRIVATE_INSTALL "/etc/tu-install"
const char *tu_private_ltr(void);

#endif
