import CacheIO
import CacheLoading

/// What a reader knows about its resource before the first byte.
public struct ReaderInfo: Sendable, Equatable {
    /// The resource's length in bytes; nil while a body of unknown length (chunked) has not ended.
    public var totalLength: Int64?
    public var contentType: String?
    /// Whether the origin answered a byte range with 206 (nil: not asked since the cache opened).
    public var acceptsRanges: Bool?
    public var etag: String?
    public var lastModified: String?
    /// The bytes served: the opened range clamped to the resource (`Int64.max` while the length is unknown).
    public var range: Range<Int64>
}

/// Reads one resource through the cache, in-process: cached runs from the data file, gaps fetched
/// (sharing downloads as a proxy request does), decrypted when the `DecryptionProvider` says so.
/// Positions are absolute offsets inside the opened range, followed by a read-ahead of up to 4 MiB.
/// Thread-safe: `cancel()` and `close()` may come from any thread and wake a blocked `read` at once.
///
/// ```swift
/// let reader = try cache.openReader(url: "https://example.com/movie.mp4")
/// let info = try reader.info(timeout: 10)
/// var buffer = [UInt8](repeating: 0, count: 65536)
/// while case let n = try buffer.withUnsafeMutableBytes({ try reader.read(into: $0, timeout: 10) }), n > 0 { … }
/// reader.close()
/// ```
public final class CacheReader: Sendable {
    /// The URL opened, as given.
    public let url: String
    /// First byte of the opened range.
    public let offset: Int64
    /// Length of the opened range; nil: to the end of the resource.
    public let length: Int64?
    let channel: ReaderChannel
    private let registry: ReaderRegistry
    private let id: Int

    init(url: String, offset: Int64, length: Int64?, channel: ReaderChannel, registry: ReaderRegistry, id: Int) {
        self.url = url
        self.offset = offset
        self.length = length
        self.channel = channel
        self.registry = registry
        self.id = id
    }

    deinit { close() }

    /// The content information, waiting up to `timeout` seconds (nil: no limit) for an uncached one's origin.
    public func info(timeout: Double? = nil) throws(HTTPCacheError) -> ReaderInfo {
        do { return make(try channel.content(deadline: Self.deadline(timeout))) } catch { throw Self.error(error) }
    }

    /// The content information, suspending until it is known.
    public func info() async throws(HTTPCacheError) -> ReaderInfo {
        do { return make(try await channel.content()) } catch { throw Self.error(error) }
    }

    /// Copies the next bytes into `buffer`: how many (> 0) as soon as any are there, 0 at the end
    /// of the range. Waits up to `timeout` seconds (nil: no limit; 0: only what is there), then
    /// throws `.timedOut` (the reader stays usable). Throws `.canceled` after `cancel()`, `.closed`
    /// after `close()` or the cache's, and the origin's failure (`.upstream`, `.tls`, `.range`…).
    public func read(into buffer: UnsafeMutableRawBufferPointer, timeout: Double? = nil) throws(HTTPCacheError) -> Int {
        do { return try channel.read(into: buffer, deadline: Self.deadline(timeout)) } catch { throw Self.error(error) }
    }

    /// The async `read(into:timeout:)`: a cancelled task ends this read with `.canceled` (reader usable).
    public func read(into buffer: UnsafeMutableRawBufferPointer) async throws(HTTPCacheError) -> Int {
        do { return try await channel.read(into: buffer) } catch { throw Self.error(error) }
    }

    /// Up to `count` next bytes; empty at the end of the range.
    public func read(upTo count: Int) async throws(HTTPCacheError) -> [UInt8] {
        // A buffer of its own: an array's bytes cannot be lent across the suspension.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, count), alignment: 1)
        defer { buffer.deallocate() }
        let n = try await read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<max(0, count)]))
        return Array(buffer[0..<n])
    }

    /// The offset of the next byte `read` returns.
    public var position: Int64 { channel.currentPosition }

    /// Moves to `position` (absolute, inside the opened range), dropping read-ahead; no I/O itself.
    /// At the range's end the next read returns 0; outside the range throws `.range` (past a
    /// length not known yet, the next read fails with `.range`).
    public func seek(to position: Int64) throws(HTTPCacheError) {
        guard position >= offset else {
            throw HTTPCacheError(.range, "offset \(position) is before the opened range at \(offset)")
        }
        if let length, position > offset + length {
            throw HTTPCacheError(.range, "offset \(position) is past the opened range \(offset)..<\(offset + length)")
        }
        if let total = channel.knownContent?.info.totalLength, position > total {
            throw HTTPCacheError(.range, "offset \(position) is past the end (\(total) bytes)")
        }
        do { try channel.seek(to: position) } catch { throw Self.error(error) }
    }

    /// Cancels the reader from any thread: a blocked read and every later call return `.canceled`
    /// at once. Downloads nobody else wants stop.
    public func cancel() {
        channel.stop(.canceled)
        registry.remove(id)
    }

    /// Releases what the reader holds (the resource becomes evictable); later calls throw `.closed`.
    public func close() {
        channel.stop(.closed)
        registry.remove(id)
    }

    private func make(_ content: ReaderContent) -> ReaderInfo {
        let info = content.info
        let total = info.totalLength ?? Int64.max
        let end = min(length.map { offset + $0 } ?? Int64.max, total)
        return ReaderInfo(totalLength: info.totalLength, contentType: info.contentType, acceptsRanges: content.rangesSupported,
                          etag: info.etag, lastModified: info.lastModified, range: min(offset, end)..<end)
    }

    private static func deadline(_ timeout: Double?) -> UInt64? {
        guard let timeout else { return nil }
        return ReaderChannel.monotonicNanoseconds() + UInt64(max(0, timeout) * 1_000_000_000)
    }

    static func error(_ error: ReaderWaitError) -> HTTPCacheError {
        switch error {
        case .timedOut: return HTTPCacheError(.timedOut, "no bytes within the timeout")
        case .canceled: return HTTPCacheError(.canceled, "the reader was canceled")
        case .closed: return HTTPCacheError(.closed, "the reader is closed")
        case .failed(.load(let load)): return HTTPCacheError(load)
        case .failed(.range(let reason)): return HTTPCacheError(.range, reason)
        case .failed(.decryption(let setup)):
            if let own = setup.underlying as? HTTPCacheError { return HTTPCacheError(own.code, setup.description) }
            return HTTPCacheError(.invalidArgument, setup.description)
        }
    }
}

/// The open readers of a cache, so that closing the cache closes them.
final class ReaderRegistry: Sendable {
    private let state = Locked<(next: Int, open: [Int: ReaderChannel], closed: Bool)>((0, [:], false))

    /// A new id, or nil once the cache is closed.
    func add(_ channel: ReaderChannel) -> Int? {
        state.withLock { state in
            guard !state.closed else { return nil }
            state.next += 1
            state.open[state.next] = channel
            return state.next
        }
    }

    func remove(_ id: Int) { _ = state.withLock { $0.open.removeValue(forKey: id) } }

    /// Stops every open reader with `.closed`; no reader opens after this.
    func closeAll() {
        let open = state.withLock { state in
            state.closed = true
            defer { state.open = [:] }
            return state.open
        }
        for channel in open.values { channel.stop(.closed) }
    }
}

/// The loop-side driver of one reader, reached from the consumer's posts.
final class DriverSlot: @unchecked Sendable {
    var driver: ReaderDriver?  // touched only on the loop thread (every access is inside loop.execute)
}
