import Glibc
import HTTPCache
import Logging

/// hc_log_fn of include/httpcache.h.
public typealias HCLogFunction = @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?) -> Void

/// The host's callback, or (without one) stderr, at `minLevel` and above. `@unchecked Sendable`: the header
/// has the callback and userdata usable from any library thread, concurrently.
struct LogTarget: @unchecked Sendable {
    /// 0 trace … 6 critical, as swift-log's `Logger.Level` cases in order; warning by default.
    var minLevel = cLevel(.warning)
    var function: HCLogFunction?
    var userdata: UnsafeMutableRawPointer?

    /// One cache's logger: to this target alone (caches may have different callbacks) and the "log-file". The
    /// process-wide `LoggingSystem` is the host's: never bootstrapped here.
    func makeLogger(file: LogFileSink? = nil) -> Logger {
        let target = self
        return Logger(label: "httpcache") { label in
            guard let file else { return CallbackLogHandler(target: target) }
            var toFile = FileLogHandler(label: label, sink: file)
            toFile.logLevel = Self.swiftLevel(target.minLevel)
            return MultiplexLogHandler([CallbackLogHandler(target: target), toFile])
        }
    }

    /// Clamped to 0…6.
    static func swiftLevel(_ level: Int32) -> Logger.Level {
        Logger.Level.allCases[Int(min(max(level, 0), 6))]
    }

    static func cLevel(_ level: Logger.Level) -> Int32 {
        Int32(Logger.Level.allCases.firstIndex(of: level) ?? 0)
    }

    func emit(_ level: Logger.Level, _ text: String) {
        if let function {
            text.withCString { function(userdata, Self.cLevel(level), $0) }
        } else {
            // One write(2) per line, so lines of concurrent threads do not interleave.
            let line = Array("httpcache: \(level): \(text)\n".utf8)
            _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        }
    }
}

/// swift-log handler that hands each message to a `LogTarget`.
struct CallbackLogHandler: LogHandler {
    let target: LogTarget
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    init(target: LogTarget) {
        self.target = target
        // The Logger filters on this level before it builds a message.
        logLevel = LogTarget.swiftLevel(target.minLevel)
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields = metadata
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        guard !fields.isEmpty else { return target.emit(event.level, event.message.description) }
        let suffix = fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        target.emit(event.level, "\(event.message) \(suffix)")
    }
}
