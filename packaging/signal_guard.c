/*
 * Keeps the host's signal dispositions intact when libhttpcache.so loads.
 *
 * The Swift runtime linked into the library may install its crash
 * backtracer at load time (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT,
 * SIGQUIT handlers and an alternate signal stack): when the host's
 * environment says SWIFT_BACKTRACE=...,swift-backtrace=PATH, or when a
 * swift-backtrace binary sits where the runtime looks for it. A library must
 * not take the host's crash signals, so this file undoes that:
 *
 * - guard_before (constructor priority 101) runs before every unprioritised
 *   constructor, including the runtime's, and records the dispositions;
 * - guard_after (unprioritised) runs after them, because scripts/install.sh
 *   links this object last and the linker keeps .init_array in input order,
 *   and puts back whatever changed.
 *
 * scripts/install.sh and the install test check the result with the
 * backtracer forced on. No symbol here is exported (version script).
 */
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>

static const int guarded[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT, SIGQUIT};
#define GUARDED_COUNT (sizeof guarded / sizeof guarded[0])

static struct sigaction saved[GUARDED_COUNT];
static int saved_ok[GUARDED_COUNT];
static stack_t saved_stack;
static int saved_stack_ok;

__attribute__((constructor(101))) static void guard_before(void) {
    for (size_t i = 0; i < GUARDED_COUNT; i++) {
        saved_ok[i] = sigaction(guarded[i], NULL, &saved[i]) == 0;
    }
    saved_stack_ok = sigaltstack(NULL, &saved_stack) == 0;
}

__attribute__((constructor)) static void guard_after(void) {
    for (size_t i = 0; i < GUARDED_COUNT; i++) {
        struct sigaction now;
        if (!saved_ok[i] || sigaction(guarded[i], NULL, &now) != 0) continue;
        if (now.sa_handler != saved[i].sa_handler || now.sa_flags != saved[i].sa_flags) {
            sigaction(guarded[i], &saved[i], NULL);
        }
    }
    /* The runtime adds an alternate stack only where the thread had none:
       drop it again, and free the mapping it made for it. */
    stack_t now;
    if (saved_stack_ok && (saved_stack.ss_flags & SS_DISABLE) && sigaltstack(NULL, &now) == 0 &&
        !(now.ss_flags & SS_DISABLE) && !(now.ss_flags & SS_ONSTACK)) {
        stack_t off = {.ss_sp = NULL, .ss_flags = SS_DISABLE, .ss_size = 0};
        if (sigaltstack(&off, NULL) == 0) munmap(now.ss_sp, now.ss_size);
    }
}
