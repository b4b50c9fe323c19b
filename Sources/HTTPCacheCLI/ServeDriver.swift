import ArgumentParser
import CacheIO
import Dispatch
import HTTPCache
import Logging

/// Signals, waited for on the main thread: a reload or a drain waits for every loop, so not on a loop's.
final class SignalQueue: Sendable {
    private let received = Locked<[Int32]>([])
    private let arrived = DispatchSemaphore(value: 0)

    func post(_ signal: Int32) {
        received.withLock { $0.append(signal) }
        arrived.signal()
    }

    /// The next signal; nil when `timeout` seconds pass first.
    func next(timeout: Double?) -> Int32? {
        let deadline = timeout.map { DispatchTime.now() + $0 } ?? .distantFuture
        guard arrived.wait(timeout: deadline) == .success else { return nil }
        return received.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    }
}

/// The thin driver of `ServeLifecycle` for `httpcache serve`, on the main thread.
struct ServeDriver {
    let command: Serve
    let cache: MediaCache
    /// The settings in force (as started, then as reloads changed them).
    var settings: ServeSettings
    let level: LiveLogLevel
    let logFile: LogFileSink?
    private var lifecycle: ServeLifecycle
    private let logger = Logger(label: "httpcache")

    init(command: Serve, cache: MediaCache, settings: ServeSettings, level: LiveLogLevel, logFile: LogFileSink?) {
        self.command = command
        self.cache = cache
        self.settings = settings
        self.level = level
        self.logFile = logFile
        lifecycle = ServeLifecycle(drainTimeout: settings.drainTimeout)
    }

    /// Runs until the lifecycle stops, then closes the cache (writing its metadata and logs).
    mutating func run(_ signals: SignalQueue) {
        while lifecycle.state != .stopped {
            // While draining, look at the responses in flight ten times a second.
            let signal = signals.next(timeout: lifecycle.isDraining ? 0.1 : nil)
            var actions: [ServeLifecycle.Action] = []
            if let signal {
                logger.info("signal received", metadata: ["signal": "\(signal)"])
                actions += lifecycle.received(signal, now: Self.now())
            }
            if lifecycle.isDraining { actions += lifecycle.tick(now: Self.now(), busy: cache.busyConnections) }
            for action in actions { perform(action) }
        }
    }

    private mutating func perform(_ action: ServeLifecycle.Action) {
        switch action {
        case .reload:
            reload()
        case .reopenLogs:
            do { try logFile?.reopen() } catch {
                logger.error("cannot reopen the log file", metadata: ["error": "\(error.message)"])
            }
            cache.reopenLogs()
            logger.notice("log files reopened")
        case .beginDrain:
            logger.notice("draining: no new connections; responses in flight may finish",
                          metadata: ["timeoutSeconds": "\(settings.drainTimeout)", "inFlight": "\(cache.busyConnections)"])
            cache.beginDrain()
        case .stop(let drained):
            if !drained { logger.warning("drain timed out: closing the responses still in flight") }
            logger.info("shutting down")
            cache.close()
        }
    }

    /// SIGHUP: the file read again under the command line; only a valid whole, only live-reloadable options.
    private mutating func reload() {
        guard command.config != nil else {
            return logger.notice("reload: no configuration file (--config); nothing to read")
        }
        do {
            let reloaded = try command.settings()
            let (merged, needRestart) = try settings.reloading(reloaded, base: Serve.baseSettings())
            try cache.reconfigure(merged.configuration)
            logChanges(settings.changes(to: merged), applied: true)
            logChanges(settings.changes(to: reloaded).filter { needRestart.contains($0.option) }, applied: false)
            level.value = merged.logLevel
            lifecycle.drainTimeout = merged.drainTimeout
            settings = merged
            if !needRestart.isEmpty {
                logger.warning("reload: these options change only at a restart; their running values stay",
                               metadata: ["options": "\(needRestart.joined(separator: ","))"])
            }
            logger.notice("configuration reloaded", metadata: [
                "file": "\(command.config ?? "")", "maxCacheSize": "\(merged.configuration.maxCacheSize)",
                "logLevel": "\(merged.logLevel)"])
        } catch {
            let reason = (error as? HTTPCacheError)?.message ?? "\(error)"
            logger.error("configuration reload refused: the running settings stay", metadata: ["reason": "\(reason)"])
        }
    }

    /// Each changed option at notice level, before and after; one that widens access also as a warning.
    private func logChanges(_ changes: [ReloadChange], applied: Bool) {
        for change in changes {
            let metadata: Logger.Metadata = [
                "option": "\(change.option)", "before": "\(change.before.joined(separator: ","))",
                "after": "\(change.after.joined(separator: ","))", "applied": "\(applied ? "now" : "at the next restart")"]
            logger.notice("reload: option changed", metadata: metadata)
            if let widening = change.widening {
                var loud = metadata
                loud["widens"] = "\(widening)"
                logger.warning("reload: ACCESS WIDENED by \(change.option): \(widening)", metadata: loud)
            }
        }
    }

    private static func now() -> Double { Double(WallClock.monotonicNanoseconds()) / 1e9 }
}

/// `httpcache check-config --config FILE`: the file checked as `serve` would read it.
struct CheckConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Check a configuration file without starting the proxy (exit 0, or 11 with FILE:LINE: reason).")

    @Option(name: .customLong("config"), help: ArgumentHelp("The configuration file.", valueName: "file"))
    var config: String

    func run() throws {
        // Every wrong line, not only the first: a user fixes them in one go.
        let (file, problems) = try ConfigFile.problems(path: config, applyingTo: Serve.baseSettings())
        if !problems.isEmpty { throw HTTPCacheError(.invalidArgument, problems.joined(separator: "\n")) }
        var settings = Serve.baseSettings()
        try file.apply(to: &settings)
        do { try settings.configuration.validate() } catch {
            throw HTTPCacheError(.invalidArgument, "\(config): \(error.message)")
        }
        print("\(config): ok (\(file.settings.count) settings)")
    }
}
