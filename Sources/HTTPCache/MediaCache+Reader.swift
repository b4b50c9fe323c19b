import CacheHTTP
import CacheLoading

extension MediaCache {
    /// Opens a reader of `url` (http or https) over `length` bytes from `offset` (nil: to the end);
    /// nothing is fetched until `info` or `read`. Throws `.invalidArgument` for another scheme or a
    /// negative range, `.closed` once the cache is closed.
    public func openReader(url: String, offset: Int64 = 0, length: Int64? = nil) throws(HTTPCacheError) -> CacheReader {
        guard let origin = OriginURL.parse(url) else {
            throw HTTPCacheError(.invalidArgument, "not an http(s) URL: \(url)")
        }
        guard offset >= 0, (length ?? 0) >= 0 else {
            throw HTTPCacheError(.invalidArgument, "bad range: offset \(offset), length \(length.map(String.init) ?? "to the end")")
        }
        let engines = self.engines  // the reader runs on the loop of the engine owning the resource
        let shard = engines.shard(ofURL: url)
        let loop = engines.loops[shard]
        let slot = DriverSlot()
        let channel = ReaderChannel(start: offset) { event, epoch in
            loop.execute {
                slot.driver?.consumer(event, epoch: epoch)
                // Stopped: the driver is done; this also breaks the driver → channel → slot cycle.
                if case .stop = event { slot.driver = nil }
            }
        }
        guard let id = readers.add(channel) else { throw HTTPCacheError(.closed, "the cache is closed") }
        let created = loop.execute {
            slot.driver = ReaderDriver(engine: engines.engine(shard), url: origin, urlString: url, start: offset, length: length,
                                       channel: channel)
        }
        guard created else {
            readers.remove(id)
            throw HTTPCacheError(.closed, "the cache is closed")
        }
        return CacheReader(url: url, offset: offset, length: length, channel: channel, registry: readers, id: id)
    }

    /// Sets (nil: removes) how resources are decrypted, replacing `configuration.decryption`. Set it
    /// before serving or opening readers: each response and reader asks once, when it starts.
    public func setDecryption(_ provider: DecryptionProvider?) throws(HTTPCacheError) {
        let lookup = HTTPCacheConfiguration.lookup(provider)
        guard engines.submitToAll({ engine in engine.decryption = lookup }).allSatisfy({ $0 != nil }) else {
            throw HTTPCacheError(.closed, "the cache is closed")
        }
    }
}
