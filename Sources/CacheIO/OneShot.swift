import Glibc

/// Handed between threads exactly once; `take` blocks.
package final class OneShot<T: Sendable>: Sendable {
    private let state = Locked<T?>(nil)
    private let ready = Semaphore()

    package init() {}

    package func put(_ value: T) {
        state.withLock { $0 = value }
        ready.signal()
    }

    package func take() -> T {
        ready.wait()
        return state.withLock { $0! }
    }
}

/// POSIX, no Foundation.
package final class Semaphore: @unchecked Sendable {
    // sem_t is only ever used through its stable heap address.
    private let sem: UnsafeMutablePointer<sem_t>

    package init(value: UInt32 = 0) {
        sem = .allocate(capacity: 1)
        sem_init(sem, 0, value)
    }
    deinit {
        sem_destroy(sem)
        sem.deallocate()
    }
    package func signal() { sem_post(sem) }
    package func wait() {
        while sem_wait(sem) != 0 && errno == EINTR {}
    }
}
