import CacheIO
import Glibc

/// What an in-process reader's consumer can be told besides bytes.
package enum ReaderWaitError: Error, Sendable {
    case timedOut
    case canceled
    case closed
    case failed(ReaderFailure)
}

package struct ReaderContent: Sendable {
    package var info: ContentInfo
    package var rangesSupported: Bool?
}

/// The handoff between an in-process reader's consumer (any thread, blocking or async) and its driver on the
/// loop: content info, a read-ahead window, end, failure, stop. One lock and condition guard it all; seeks
/// bump `epoch` so bytes made for the old position are dropped on arrival.
package final class ReaderChannel: @unchecked Sendable {
    // Everything below the lock is touched only with `mutex` held.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var content: ReaderContent?
    /// Read-ahead chunks as the loop handed them over (moved, not copied); `readIndex`: place in the first.
    private var chunks: [[UInt8]] = []
    private var readIndex = 0
    private var buffered = 0
    private var epoch = 0
    private var ended = false
    private var failure: ReaderFailure?
    private var stopped: ReaderWaitError?
    private var demandPosted = false
    private var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    private var nextWaiter = 0
    /// Counts state changes, so an async waiter that registers late sees it missed one.
    private var changes = 0
    private var position: Int64

    /// How many plaintext bytes the loop reads ahead of the consumer.
    package let window: Int
    /// Posts an event (and the epoch it belongs to) to the driver on the loop; false once the loop is gone.
    private let post: @Sendable (ReaderMachine.Event, Int) -> Bool

    package init(start: Int64, window: Int = 4 << 20, post: @escaping @Sendable (ReaderMachine.Event, Int) -> Bool) {
        position = start
        self.window = window
        self.post = post
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    private func locked<T>(_ body: () throws(ReaderWaitError) -> T) throws(ReaderWaitError) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// The next byte `read` returns.
    package var currentPosition: Int64 { (try? locked { position }) ?? 0 }

    /// The content info, waiting until `deadline` (monotonic ns; nil: forever).
    package func content(deadline: UInt64?) throws(ReaderWaitError) -> ReaderContent {
        try waitFor(deadline, contentLocked)
    }

    /// The content, or nil after asking the loop for it.
    private func contentLocked() throws(ReaderWaitError) -> ReaderContent? {
        if let stopped { throw stopped }
        if let content { return content }
        if let failure { throw .failed(failure) }
        askLocked()
        return nil
    }

    /// The content info if it is known already (never waits, asks nothing).
    package var knownContent: ReaderContent? { try? locked { content } }

    /// Copies available bytes into `into`: >0 bytes, 0 at the end of the range; waits
    /// until `deadline` (monotonic ns; nil: forever) when none are there yet.
    package func read(into: UnsafeMutableRawBufferPointer, deadline: UInt64?) throws(ReaderWaitError) -> Int {
        guard into.count > 0 else { return 0 }
        return try waitFor(deadline) { () throws(ReaderWaitError) in try takeLocked(into) }
    }

    /// The async form of `read(into:deadline:)`: suspends instead of blocking.
    package func read(into: UnsafeMutableRawBufferPointer) async throws(ReaderWaitError) -> Int {
        guard into.count > 0 else { return 0 }
        return try await suspendFor { () throws(ReaderWaitError) in try takeLocked(into) }
    }

    /// The async form of `content(deadline:)`.
    package func content() async throws(ReaderWaitError) -> ReaderContent {
        try await suspendFor(contentLocked)
    }

    /// `attempt`'s answer, tried under the lock until it gives one, waiting until `deadline` between tries.
    private func waitFor<T>(_ deadline: UInt64?,
                            _ attempt: () throws(ReaderWaitError) -> T?) throws(ReaderWaitError) -> T {
        try locked { () throws(ReaderWaitError) -> T in
            while true {
                if let answer = try attempt() { return answer }
                try waitLocked(deadline)
            }
        }
    }

    /// As `waitFor`, suspending for the next change between tries.
    private func suspendFor<T>(_ attempt: () throws(ReaderWaitError) -> T?)
        async throws(ReaderWaitError) -> T {
        while true {
            let step = try locked { () throws(ReaderWaitError) -> (answer: T?, seen: Int) in
                (try attempt(), changes)
            }
            if let answer = step.answer { return answer }
            await suspend(seen: step.seen)
            if Task.isCancelled { throw .canceled }
        }
    }

    /// Waits for the next change after the one numbered `seen` (or the task's cancellation).
    private func suspend(seen: Int) async {
        pthread_mutex_lock(mutex)
        nextWaiter += 1
        let id = nextWaiter
        pthread_mutex_unlock(mutex)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                pthread_mutex_lock(mutex)
                // A change since the caller looked (or a cancellation) means no waiting.
                let now = changes != seen || Task.isCancelled
                if !now { waiters[id] = continuation }
                pthread_mutex_unlock(mutex)
                if now { continuation.resume() }
            }
        } onCancel: {
            wake(id)
        }
    }

    private func wake(_ id: Int) { (try? locked { waiters.removeValue(forKey: id) })?.resume() }

    /// Bytes, end or failure: nil when the consumer must wait (demand is then posted).
    private func takeLocked(_ into: UnsafeMutableRawBufferPointer) throws(ReaderWaitError) -> Int? {
        if let stopped { throw stopped }
        if buffered > 0 {
            var count = 0
            while count < into.count, let first = chunks.first {
                let take = min(into.count - count, first.count - readIndex)
                first.withUnsafeBytes { bytes in
                    UnsafeMutableRawBufferPointer(rebasing: into[count..<(count + take)])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[readIndex..<(readIndex + take)]))
                }
                count += take
                readIndex += take
                if readIndex == first.count {
                    chunks.removeFirst()
                    readIndex = 0
                }
            }
            buffered -= count
            position += Int64(count)
            if buffered <= window / 2 { askLocked() }
            return count
        }
        if let failure { throw .failed(failure) }
        if ended { return 0 }
        askLocked()
        return nil
    }

    /// Tells the loop the consumer wants more (once until the loop answers).
    private func askLocked() {
        guard !demandPosted, stopped == nil else { return }
        demandPosted = true
        if !post(.demand, epoch) {
            stopped = .closed
            broadcastLocked()
        }
    }

    private func waitLocked(_ deadline: UInt64?) throws(ReaderWaitError) {
        guard let deadline else {
            pthread_cond_wait(condition, mutex)
            return
        }
        let now = Self.monotonicNanoseconds()
        guard now < deadline else { throw .timedOut }
        var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        _ = pthread_cond_timedwait(condition, mutex, &time)
    }

    /// Moves the read position (within the checks the caller made): read-ahead is dropped.
    package func seek(to offset: Int64) throws(ReaderWaitError) {
        try locked { () throws(ReaderWaitError) in
            if let stopped { throw stopped }
            epoch += 1
            dropReadAheadLocked()
            ended = false
            failure = nil
            position = offset
            demandPosted = false
            if !post(.seek(offset), epoch) {
                stopped = .closed
                throw .closed
            }
            askLocked()
        }
    }

    /// Ends the reader for every waiter, now and later; false when already stopped.
    @discardableResult
    package func stop(_ reason: ReaderWaitError) -> Bool {
        let first: Bool = (try? locked { () -> Bool in
            guard stopped == nil else { return false }
            stopped = reason
            dropReadAheadLocked()
            broadcastLocked()
            return true
        }) ?? false
        resumeAll()
        if first { _ = post(.stop, Int.max) }
        return first
    }

    /// Takes `chunk` over (no copy): the room left, or nil when of an older epoch (dropped).
    package func publish(chunk: [UInt8], epoch: Int) -> Int? {
        let room: Int? = try? locked { () -> Int? in
            guard epoch == self.epoch, stopped == nil else { return nil }
            if !chunk.isEmpty {
                chunks.append(chunk)
                buffered += chunk.count
            }
            broadcastLocked()
            return max(0, window - buffered)
        }
        resumeAll()
        return room
    }

    /// The loop answered a demand: the next shortfall posts a new one.
    package func demandHandled(epoch: Int) {
        try? locked { () -> Void in
            if epoch == self.epoch { demandPosted = false }
        }
    }

    package var room: Int { (try? locked { max(0, window - buffered) }) ?? 0 }

    package func publish(content: ReaderContent) {
        publish(epoch: nil) { if self.content == nil { self.content = content } }
    }

    /// The length became known (a body of unknown length ended).
    package func update(totalLength: Int64) {
        try? locked { () -> Void in content?.info.totalLength = totalLength }
    }

    package func publishEnd(epoch: Int) { publish(epoch: epoch) { ended = true } }
    package func publish(failure: ReaderFailure, epoch: Int) { publish(epoch: epoch) { self.failure = failure } }

    /// Makes `change` under the lock (when `epoch` is nil or still current) and wakes every waiter.
    private func publish(epoch: Int?, _ change: () -> Void) {
        try? locked { () -> Void in
            guard epoch == nil || epoch == self.epoch else { return }
            change()
            broadcastLocked()
        }
        resumeAll()
    }

    private func dropReadAheadLocked() {
        chunks.removeAll()
        readIndex = 0
        buffered = 0
    }

    private func broadcastLocked() {
        changes &+= 1
        pthread_cond_broadcast(condition)
    }

    private func resumeAll() {
        pthread_mutex_lock(mutex)
        let all = waiters
        waiters.removeAll()
        pthread_mutex_unlock(mutex)
        for continuation in all.values { continuation.resume() }
    }

    /// The clock of the deadlines (the condition waits on CLOCK_MONOTONIC too).
    package static func monotonicNanoseconds() -> UInt64 { WallClock.monotonicNanoseconds() }
}
