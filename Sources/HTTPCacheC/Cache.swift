// hc_open, hc_close, hc_serve, hc_port, hc_proxy_url: an hc_cache* is a retained CacheHandle.
import HTTPCache
import Logging
import CacheIO

/// The object behind an hc_cache*: the cache, its logger, and the readers and preloads hc_close ends.
final class CacheHandle: OpaqueHandle, Sendable {
    let cache: MediaCache
    let logger: Logger
    let dependents = Dependents()
    /// Held across hc_serve: a second call, even concurrent, reports HC_EINVAL (serve() would do nothing).
    private let serveLock = Locked(())
    /// The download event callback's subscription (hc_download_set_callback).
    let downloadCallback = Locked<Int?>(nil)

    init(cache: MediaCache, logger: Logger) {
        self.cache = cache
        self.logger = logger
    }

    func serve() throws(HTTPCacheError) {
        try serveLock.withLock { _ throws(HTTPCacheError) in
            if cache.port != nil { throw HTTPCacheError(.invalidArgument, "already serving") }
            try cache.serve()
        }
    }

    /// Readers and preloads first (blocked calls return HC_ECLOSED while the engine runs), then the rest.
    func close() {
        dependents.closeAll()
        cache.close()
    }
}

@c public func hc_open(_ config: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let out else { return hcInvalid }
    out.pointee = nil
    guard let handle = ConfigHandle.from(config) else { return hcInvalid }
    let (settings, log) = (handle.settings, handle.log)  // copies: the hc_config may go at once
    var logger = log.makeLogger()
    if let failure = handle.failure {
        // Checked before the folder is touched: nothing is created.
        logger.warning("hc_open: the configuration is unusable: an earlier hc_config_set failed: \(failure.message)")
        return failure.cCode
    }
    guard !settings.configuration.cacheDirectory.isEmpty else {
        logger.warning("hc_open: the configuration has no \"cache-dir\"")
        return hcInvalid
    }
    do throws(HTTPCacheError) {
        if let path = settings.logFile { logger = log.makeLogger(file: try LogFileSink(path: path)) }
        let cache = try MediaCache(configuration: settings.configuration, logger: logger)
        out.pointee = CacheHandle(cache: cache, logger: logger).retainedPointer
        return hcOK
    } catch {
        // The code alone cannot say which folder or who holds it.
        logger.warning("hc_open: \(error.message)")
        return error.cCode
    }
}

@c public func hc_close(_ cache: OpaquePointer?) {
    CacheHandle.release(cache)?.close()
}

@c public func hc_serve(_ cache: OpaquePointer?) -> Int32 {
    guard let handle = CacheHandle.from(cache) else { return hcInvalid }
    do throws(HTTPCacheError) {
        try handle.serve()
        return hcOK
    } catch {
        handle.logger.warning("hc_serve: \(error.message)")
        return error.cCode
    }
}

@c public func hc_port(_ cache: OpaquePointer?) -> Int32 {
    guard let port = CacheHandle.from(cache)?.cache.port else { return hcInvalid }
    return Int32(port)
}

@c public func hc_proxy_url(_ cache: OpaquePointer?, _ originURL: UnsafePointer<CChar>?,
                            _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int32 {
    guard let handle = CacheHandle.from(cache), let originURL else { return hcInvalid }
    do throws(HTTPCacheError) {
        return copyOut(try handle.cache.proxyURL(for: String(cString: originURL)), to: buffer, size: size)
    } catch {
        return error.cCode
    }
}

/// `text` copied with the snprintf contract (at most `size` bytes, NUL-terminated when `size` > 0; the whole
/// length returned). HC_EINVAL: a NULL buffer with a size, a text over an int, a size_t above Int.max.
func copyOut(_ text: String, to buffer: UnsafeMutablePointer<CChar>?, size: Int) -> Int32 {
    let bytes = text.utf8
    guard bytes.count <= Int32.max, size >= 0, buffer != nil || size == 0 else { return hcInvalid }
    if let buffer, size > 0 {
        let count = min(bytes.count, size - 1)
        UnsafeMutableRawPointer(buffer).withMemoryRebound(to: UInt8.self, capacity: size) { target in
            _ = UnsafeMutableBufferPointer(start: target, count: count).initialize(from: bytes.prefix(count))
            target[count] = 0
        }
    }
    return Int32(bytes.count)
}
