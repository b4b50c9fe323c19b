import Dispatch
import CacheStorage
import Glibc
import Logging
import CacheIO

/// One access-log record: a response as the client saw it. `line()` gives the text, fields
/// separated by one space:
///
///     2026-11-23T18:01:36.123Z 127.0.0.1:51234 GET "/p/aHR0…/movie.mp4" 206 1048576 65536 PARTIAL partial 12.345 6e2f… 21300
///     time                     client          method target            status sent fetched cache  cache-status ms     sid  bl
///
/// `sid` and `bl` are the player's CMCD session id and buffer length in milliseconds (CTA-5004),
/// `-` when the request carried none. `cache-status` is the word of the response's Cache-Status
/// (RFC 9211), as /metrics counts them.
///
/// The target is quoted; inside it `"` and `\` are backslash-escaped and any byte outside printable
/// ASCII is `\xHH`, so a request can never split or forge a line. The other text fields get the
/// same without quotes (a space is `\x20` there); an empty one is `-`.
package struct AccessLogEntry: Sendable, Equatable {
    /// When the response ended: milliseconds since the Unix epoch (wall clock).
    package var time: Int64
    /// E.g. `127.0.0.1:51234` or `[::1]:51234`.
    package var client: String
    package var method: String
    package var target: String
    package var status: Int
    /// Head and body bytes written to the client.
    package var bytesSent: UInt64
    package var bytesFromOrigin: UInt64
    package var cache: CacheStatus
    /// The Cache-Status word (`CacheStatusField.word`).
    package var cacheStatus = "bypass"
    /// From the request head to the last byte queued.
    package var durationMilliseconds: Double
    /// CMCD `sid`, if sent.
    package var sessionID: String?
    /// CMCD `bl` (milliseconds), if sent.
    package var bufferLength: Int64?

    package func line() -> String {
        [Self.timestamp(milliseconds: time), Self.token(client), Self.token(method),
         "\"" + Self.escaped(target, escapingSpace: false) + "\"",
         "\(status) \(bytesSent) \(bytesFromOrigin)", cache.rawValue, Self.token(cacheStatus),
         MetricsSnapshot.decimal(max(0, durationMilliseconds), digits: 3),
         Self.token(sessionID ?? ""), bufferLength.map { String($0) } ?? "-"].joined(separator: " ")
    }

    /// ISO 8601 in UTC with milliseconds: `2026-11-23T18:01:36.123Z`.
    package static func timestamp(milliseconds: Int64) -> String {
        // Rounded toward minus infinity: times before 1970 stay right.
        let millis = Int((milliseconds % 1000 + 1000) % 1000)
        var seconds = time_t((milliseconds - Int64(millis)) / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return pad(parts.tm_year + 1900, 4) + "-" + pad(parts.tm_mon + 1, 2) + "-" + pad(parts.tm_mday, 2)
            + "T" + pad(parts.tm_hour, 2) + ":" + pad(parts.tm_min, 2) + ":" + pad(parts.tm_sec, 2)
            + "." + pad(Int32(millis), 3) + "Z"
    }

    /// An unquoted field: escaped, spaces included, and never empty.
    static func token(_ text: String) -> String {
        text.isEmpty ? "-" : escaped(text, escapingSpace: true)
    }

    /// Printable ASCII stays, `"` and `\` get a backslash, everything else is `\xHH`.
    static func escaped(_ text: String, escapingSpace: Bool) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                out += [UInt8(ascii: "\\"), byte]
            case UInt8(ascii: " ") where escapingSpace, 0..<0x20, 0x7f...:
                out += [UInt8(ascii: "\\"), UInt8(ascii: "x"), hex[Int(byte >> 4)], hex[Int(byte & 0xf)]]
            default:
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Appends access-log lines to a file (`--access-log FILE`) without blocking the event loop.
///
/// `append` (any thread) adds the line to a buffer under a mutex; a thread of its own writes it at
/// most `flushInterval` after its first line, or at once past `flushBytes` (a burst costs one
/// `write(2)`). Past `maxBufferedBytes` waiting (slow or failing disk), lines are dropped and counted
/// in `droppedLines`, as are lines that fail to be written: losing log lines beats stalling clients.
/// The file is O_APPEND (safe next to other writers), 0600 (it names clients and URLs). Call
/// `close()` once at shutdown (the thread keeps the writer alive until then).
package final class AccessLogWriter: Sendable {
    package static let flushInterval = DispatchTimeInterval.milliseconds(100)

    private struct State {
        var pending: [UInt8] = []
        /// Lines appended before `reopen()`, owed to the file open before it.
        var beforeReopen: [UInt8]?
        var dropped: UInt64 = 0
        var closing = false
        var path: String
    }

    /// The file lines go to (after a pending reopen, the one it opens).
    package var path: String { state.withLock { $0.path } }
    private let flushBytes: Int
    private let maxBufferedBytes: Int
    private let logger: Logger
    private let state: Locked<State>
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled once by the thread when it has written everything and closed the file.
    private let finished = DispatchSemaphore(value: 0)
    /// The file as opened by `init`; after that the thread owns the descriptor.
    private let initialDescriptor: Int32

    package init(path: String, logger: Logger, flushBytes: Int = 64 << 10, maxBufferedBytes: Int = 4 << 20) throws {
        let fd = Self.open(path)
        guard fd >= 0 else { throw AccessLogError(path: path, errno: errno) }
        state = Locked(State(path: path))
        self.flushBytes = flushBytes
        self.maxBufferedBytes = maxBufferedBytes
        self.logger = logger
        initialDescriptor = fd
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { context in
            let writer = Unmanaged<AccessLogWriter>.fromOpaque(context!).takeRetainedValue()
            writer.run()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<AccessLogWriter>.fromOpaque(context).release()
            Glibc.close(fd)
            throw AccessLogError(path: path, errno: status)
        }
        pthread_detach(thread)
    }

    package func append(line: String) {
        let bytes = line.utf8.count + 1
        let signal = state.withLock { state -> Bool in
            let waiting = state.pending.count + (state.beforeReopen?.count ?? 0)
            guard !state.closing, waiting + bytes <= maxBufferedBytes else {
                state.dropped += 1
                return false
            }
            state.pending.append(contentsOf: line.utf8)
            state.pending.append(UInt8(ascii: "\n"))
            // Wake the thread for the first line (it starts the interval) and past the size threshold.
            let before = state.pending.count - bytes
            return before == 0 || (before < flushBytes && state.pending.count >= flushBytes)
        }
        if signal { wake.signal() }
    }

    /// Log rotation: earlier lines go to the file open now, later ones to `path` (a reload's) opened anew.
    package func reopen(path: String? = nil) {
        let accepted = state.withLock { state -> Bool in
            guard !state.closing else { return false }
            if let path { state.path = path }
            state.beforeReopen = (state.beforeReopen ?? []) + state.pending
            state.pending = []
            return true
        }
        if accepted { wake.signal() }
    }

    /// Writes every accepted line, closes the file, stops the thread; later appends are dropped. Idempotent.
    package func close() {
        let first = state.withLock { state -> Bool in
            defer { state.closing = true }
            return !state.closing
        }
        guard first else { return }
        wake.signal()
        finished.wait()
    }

    /// Lines dropped so far (buffer full, write failed, or appended after close).
    package var droppedLines: UInt64 { state.withLock { $0.dropped } }

    // MARK: writer thread

    private func run() {
        var fd = initialDescriptor
        var failing = false
        while true {
            wake.wait()
            let urgent = state.withLock { $0.closing || $0.beforeReopen != nil || $0.pending.count >= flushBytes }
            if !urgent {
                // Let lines gather; a size crossing, reopen or close ends the wait early.
                _ = wake.wait(timeout: .now() + Self.flushInterval)
            }
            let (before, lines, closing, path) = state.withLock { state in
                defer {
                    state.beforeReopen = nil
                    state.pending = []
                }
                return (state.beforeReopen, state.pending, state.closing, state.path)
            }
            if let before {
                write(before, to: fd, failing: &failing)
                let fresh = Self.open(path)
                if fresh >= 0 {
                    Glibc.close(fd)
                    fd = fresh
                } else {
                    logger.warning("cannot reopen the access log, still writing to the old file",
                                   metadata: ["path": "\(path)", "error": "\(FileIO.errorText())"])
                }
            }
            write(lines, to: fd, failing: &failing)
            if closing { break }
        }
        Glibc.close(fd)
        finished.signal()
    }

    /// What cannot be written counts as dropped lines. Logs when writing starts and stops failing.
    private func write(_ bytes: [UInt8], to fd: Int32, failing: inout Bool) {
        guard !bytes.isEmpty else { return }
        var offset = 0
        var error: Int32 = 0
        bytes.withUnsafeBytes { buffer in
            while offset < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n > 0 {
                    offset += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    error = n < 0 ? errno : EIO
                    break
                }
            }
        }
        if offset < bytes.count {
            let lost = UInt64(bytes[offset...].lazy.filter { $0 == UInt8(ascii: "\n") }.count)
            state.withLock { $0.dropped += lost }
            if !failing {
                failing = true
                logger.warning("cannot write the access log, dropping lines",
                               metadata: ["path": "\(path)", "error": "\(FileIO.errorText(error))"])
            }
        } else if failing {
            failing = false
            logger.info("access log writable again", metadata: ["path": "\(path)"])
        }
    }

    /// Created 0600; an existing file others may read is narrowed too (the lines name clients and URLs).
    private static func open(_ path: String) -> Int32 {
        let fd = Glibc.open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        if fd >= 0 { FileIO.restrict(fd: fd, to: 0o600) }
        return fd
    }
}

package struct AccessLogError: Error, CustomStringConvertible {
    package var path: String
    package var errno: Int32

    package var description: String { "cannot open the access log \(path): \(FileIO.errorText(errno))" }
}
