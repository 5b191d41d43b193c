/*
 * tests/programs/nounix.c — ltr-test-nounix [--getpid] CMD [ARG...]: runs CMD
 * under a seccomp filter that refuses socket(AF_UNIX, ...) with EAFNOSUPPORT,
 * as systemd's RestrictAddressFamilies= without AF_UNIX does for a service.
 * The heap agent reaches the recorder through a Unix socket, so such a
 * process never joins a session: what ltr says about it is tested with this.
 * With --getpid the filter refuses getpid() with EPERM instead (as a
 * SystemCallFilter= may): the agent reaches the recorder claiming pid -1,
 * and is refused.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "ltr-test-nounix: add this architecture's AUDIT_ARCH"
#endif

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: ltr-test-nounix CMD [ARG...]\n");
        return 2;
    }
    bool getpid_only = !strcmp(argv[1], "--getpid");
    if (getpid_only && argc < 3) {
        fprintf(stderr, "usage: ltr-test-nounix [--getpid] CMD [ARG...]\n");
        return 2;
    }
    argv += getpid_only;
    /* one filter: the syscall not denied gets a number no syscall has */
    uint32_t getpid_nr = getpid_only ? __NR_getpid : UINT32_MAX, socket_nr = getpid_only ? UINT32_MAX : __NR_socket;
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, getpid_nr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, socket_nr, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAFNOSUPPORT),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof *f, f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("ltr-test-nounix: seccomp");
        return 1;
    }
    execvp(argv[1], argv + 1);
    perror(argv[1]);
    return 127;
}
