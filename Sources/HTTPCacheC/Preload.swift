// hc_preload_*: an hc_preload* is a retained PreloadHandle over a PreloadTask. Its callbacks run on a
// library thread (a detached task following the preload), never on the caller's.
import HTTPCache
import CacheIO

public typealias HCProgressFunction = @convention(c) (UnsafeMutableRawPointer?, Int64, Int64) -> Void
public typealias HCDoneFunction = @convention(c) (UnsafeMutableRawPointer?, Int32) -> Void

/// One C preload: forwards the task's progress and end to the host's callbacks.
final class PreloadHandle: CacheDependent, OpaqueHandle, @unchecked Sendable {
    // The host's; only the one follower task calls them.
    private let progress: HCProgressFunction?
    private let done: HCDoneFunction?
    private let userdata: UnsafeMutableRawPointer?
    private let dependents: Dependents
    let task: PreloadTask
    private struct State {
        /// hc_close is ending it: the outcome is HC_ECLOSED whatever the task says.
        var closing = false
        var doneCalled = false
    }
    private let state = Locked(State())
    /// Signalled once `done` has run.
    private let doneRan = Semaphore()

    init(task: PreloadTask, progress: HCProgressFunction?, done: HCDoneFunction?,
         userdata: UnsafeMutableRawPointer?, dependents: Dependents) {
        self.task = task
        self.progress = progress
        self.done = done
        self.userdata = userdata
        self.dependents = dependents
    }

    /// Follows the task on a library thread; called once `*out` is set.
    func follow() {
        Task.detached { [self] in
            for await update in task.updates {
                progress?(userdata, update.bytesDone, update.bytesTotal ?? -1)
            }
            let code: Int32
            switch task.result {
            case .success(let final)?:
                // The contract: a final progress(total, total) comes before done(HC_OK).
                progress?(userdata, final.bytesDone, final.bytesDone)
                code = hcOK
            case .failure(let error)?: code = error.cCode
            case nil: code = HTTPCacheError.Code.canceled.rawValue
            }
            let closing = state.withLock { $0.closing }
            done?(userdata, closing ? HTTPCacheError.Code.closed.rawValue : code)
            state.withLock { $0.doneCalled = true }
            doneRan.signal()
        }
    }

    /// hc_close: end with HC_ECLOSED and wait until `done` ran: no callback comes after hc_close returns.
    func cacheClosing() {
        let ended = state.withLock { state in
            state.closing = true
            return state.doneCalled
        }
        task.cancel()
        if !ended { doneRan.wait() }
    }

    func unregister() { dependents.remove(self) }
}

@c public func hc_preload_start(_ cache: OpaquePointer?, _ url: UnsafePointer<CChar>?, _ offset: Int64, _ length: Int64,
                                _ progress: HCProgressFunction?, _ done: HCDoneFunction?,
                                _ userdata: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let handle = CacheHandle.from(cache), let url, let out, offset >= 0, length >= -1 else { return hcInvalid }
    out.pointee = nil
    // The whole resource (and, for a playlist or an MPD, the walk) unless a range is asked.
    var range: ClosedRange<Int64>?
    if offset > 0 || length >= 0 {
        guard length != 0 else { return hcInvalid }
        range = offset...(length < 0 ? Int64.max - 1 : offset + length - 1)
    }
    let task: PreloadTask
    do throws(HTTPCacheError) {
        task = try handle.cache.preload(String(cString: url), range: range)
    } catch {
        return error.cCode
    }
    let preload = PreloadHandle(task: task, progress: progress, done: done, userdata: userdata,
                                dependents: handle.dependents)
    guard handle.dependents.add(preload) else {
        task.cancel()
        return HTTPCacheError.Code.closed.rawValue
    }
    out.pointee = preload.retainedPointer
    preload.follow()
    return hcOK
}

@c public func hc_preload_cancel(_ preload: OpaquePointer?) {
    PreloadHandle.from(preload)?.task.cancel()
}

@c public func hc_preload_free(_ preload: OpaquePointer?) {
    PreloadHandle.release(preload)?.unregister()
}
