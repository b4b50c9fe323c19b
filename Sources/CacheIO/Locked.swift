import Glibc

/// A value behind a pthread mutex, for state shared between threads.
///
/// Used instead of `Synchronization.Mutex`: on Linux that lock is built on
/// futexes ThreadSanitizer cannot see, so every access it guards is reported
/// as a race and `--sanitize thread` would say nothing useful. The cost (one
/// allocation per lock, an uncontended pthread lock per use) does not matter
/// off the hot path, which is all this guards.
package final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "pthread_mutex_init failed: \(status)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock.
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
