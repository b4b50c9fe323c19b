import Dispatch
import Foundation

/// Keeps a run bounded and tidy: the servers it started are stopped when the
/// run is interrupted (SIGINT, SIGTERM) or exceeds its time limit, instead of
/// being left running behind a dead benchmark.
final class Watchdog: @unchecked Sendable {
    static let shared = Watchdog()

    private let lock = NSLock()
    private var pids: Set<Int32> = []
    private var sources: [DispatchSourceSignal] = []
    /// A temporary folder of the run, removed on the way out.
    private var scratch: String?
    /// Set once the run is being stopped; the main thread must then not finish normally.
    private var stopping = false

    /// Remembers a child process to stop on the way out.
    func track(_ pid: Int32) {
        lock.lock()
        pids.insert(pid)
        lock.unlock()
    }

    func removeOnExit(_ directory: String?) {
        lock.lock()
        scratch = directory
        lock.unlock()
    }

    func untrack(_ pid: Int32) {
        lock.lock()
        pids.remove(pid)
        lock.unlock()
    }

    /// Installs the signal handlers and the overall deadline.
    func arm(timeLimit seconds: Double, log: @escaping @Sendable (String) -> Void) {
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)  // delivered to the dispatch source instead
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { [self] in
                log("interrupted: stopping the servers")
                stopAll()
                _exit(130)  // not exit(): the main thread is still driving load
            }
            source.resume()
            sources.append(source)
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
            FileHandle.standardError.write(Data("httpcache-bench: time limit of \(Int(seconds)) s reached; stopping\n".utf8))
            stopAll()
            _exit(2)
        }
    }

    /// Called by the main thread before it finishes: when a stop is under way,
    /// parks it so the exit status is the watchdog's, not a normal one.
    func parkIfStopping() {
        lock.lock()
        let parked = stopping
        lock.unlock()
        while parked { sleep(60) }
    }

    private func stopAll() {
        lock.lock()
        stopping = true
        let running = pids
        let scratch = self.scratch
        lock.unlock()
        for pid in running { kill(pid, SIGTERM) }
        usleep(300_000)
        for pid in running { kill(pid, SIGKILL) }
        if let scratch { try? FileManager.default.removeItem(atPath: scratch) }
    }
}
