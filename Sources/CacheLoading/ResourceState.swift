import CacheHTTP
import CacheStorage

/// Loading's view of one resource: its downloads and waiting readers. Lives while used, and (a shared cached
/// resource) idle until its next request, within `Loader.idleStatesKept`. Loop thread only.
final class ResourceState {
    let resource: Resource
    // Loop-confined, never accessed overlapping: no dynamic exclusivity check (touched on every request).
    @exclusivity(unchecked) var downloads: [Download] = []
    /// Readers to wake when bytes land or a download ends.
    @exclusivity(unchecked) var waiting: [ObjectIdentifier: ResourceReader] = [:]
    /// True once an origin response head established the resource's shape.
    @exclusivity(unchecked) var headKnown: Bool
    /// The download that establishes the head, while it is unknown.
    var probe: Download?
    /// The in-flight check of the cached version, if any.
    var validation: Download?
    /// Where the bytes come from (the latest URL asked for this cache key).
    @exclusivity(unchecked) var originURL: OriginURL?
    /// The response may not be shared (RFC 9111 §3): later requests never join this state.
    var notShared = false
    /// The origin answered a Range with 206 (true) or 200 (false); nil: not yet.
    var rangesSupported: Bool?
    /// The furthest offset any reader took: an unknown length runs at most `Download.paceWindow` ahead.
    @exclusivity(unchecked) var readHorizon: Int64 = 0

    init(resource: Resource) {
        self.resource = resource
        headKnown = resource.totalLength != nil
    }

    var info: ContentInfo {
        let metadata = resource.metadata
        return ContentInfo(totalLength: metadata.totalLength, contentType: metadata.contentType,
                           etag: metadata.etag, lastModified: metadata.lastModified)
    }

    var inFlight: [InFlight] {
        downloads.compactMap { download in
            // Bytes passed through never land in the file: nobody can wait for them.
            guard download.ready, !download.finished, !download.isPassThrough else { return nil }
            let end = download.end ?? Int64.max
            return download.position < end ? InFlight(id: download.id, pending: download.position..<end) : nil
        }
    }

    func download(id: Int) -> Download? { downloads.first { $0.id == id } }

    /// A reader took bytes up to `offset`: a download waiting for readers may go on.
    func readerReached(_ offset: Int64) {
        guard offset > readHorizon else { return }
        readHorizon = offset
        for download in downloads where download.isWaitingForReaders { download.readersAdvanced() }
    }

    /// Wakes every waiting reader (each re-registers if it must wait again).
    func wakeReaders() {
        guard !waiting.isEmpty else { return }
        let readers = waiting
        waiting.removeAll(keepingCapacity: true)
        for reader in readers.values { reader.resourceChanged() }
    }

    /// After a failed download with nothing cached or loading: forget the failed head (its
    /// length above all), so a response that broke its own framing leaves nothing behind.
    func forgetHeadIfNothingCached() {
        guard headKnown, downloads.isEmpty, resource.available.isEmpty else { return }
        resource.setInfo(totalLength: nil, contentType: nil, etag: nil, lastModified: nil)
        headKnown = false
    }
}
