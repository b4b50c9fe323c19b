import CacheHTTP
import CacheIO
import CacheStorage
import CacheUpstream
import Logging

/// Turns client requests into cache reads and origin downloads.
/// Any number of readers share one download of the same bytes. Loop thread only.
package final class Loader {
    static let maxErrorBody = 64 << 10

    package let store: ResourceStore
    package let client: UpstreamClient
    private let logger: Logger
    private var states: [String: ResourceState] = [:]
    private var readerCounts: [String: Int] = [:]
    private var nextDownloadID = 0
    /// Bytes received from origins (for stats and tests).
    package private(set) var originRequests = 0

    package init(store: ResourceStore, client: UpstreamClient, logger: Logger) {
        self.store = store
        self.client = client
        self.logger = logger
    }

    /// A reader for `url`, cached under `cacheKey`; `spec` is the client's Range if any.
    package func reader(url: OriginURL, cacheKey: String, spec: ByteRangeSpec?) -> ResourceReader {
        let resource = store.resource(forKey: cacheKey, url: url.string)
        let state = states[resource.key] ?? {
            let created = ResourceState(resource: resource)
            states[resource.key] = created
            return created
        }()
        state.originURL = url
        resource.users += 1
        resource.touch()
        readerCounts[resource.key, default: 0] += 1
        return ResourceReader(loader: self, state: state, spec: spec)
    }

    func startDownload(_ state: ResourceState, _ request: Download.Request) -> Download {
        nextDownloadID += 1
        let download = Download(id: nextDownloadID, state: state, request: request, loader: self)
        if case .range(let range) = request {
            // A download already heading into this range stops where this one starts.
            for other in state.downloads where !other.finished {
                if let otherEnd = other.end, other.position < range.lowerBound, otherEnd > range.lowerBound {
                    other.end = range.lowerBound
                }
            }
        } else {
            state.probe = download
        }
        state.downloads.append(download)
        state.resource.users += 1
        originRequests += 1
        var headers = HTTPHeaders()
        headers.add("Range", download.rangeHeader)
        guard let url = state.originURL else { preconditionFailure("resource state without URL") }
        logger.debug("fetch \(url.string) \(download.rangeHeader)")
        download.task = client.get(url, headers: headers, delegate: download)
        return download
    }

    func leave(_ download: Download) {
        download.interest -= 1
        if download.interest <= 0 && !download.finished && !download.hasWrittenAll {
            logger.debug("cancel unwanted download \(download.rangeHeader)")
            download.cancel()
        }
    }

    func downloadFinished(_ download: Download) {
        let state = download.state
        state.downloads.removeAll { $0 === download }
        if state.probe === download { state.probe = nil }
        if let failure = download.failure, let url = state.originURL {
            switch failure {
            case .originStatus(let status, _, _):
                logger.info("origin answered \(status) for \(url.string)")
            default:
                logger.warning("download failed for \(url.string) \(download.rangeHeader): \(failure)")
            }
        }
        state.resource.users -= 1
        state.resource.flush()
        state.wakeReaders()
        release(state)
    }

    func readerClosed(_ reader: ResourceReader) {
        let state = reader.state
        state.resource.users -= 1
        readerCounts[state.resource.key, default: 1] -= 1
        release(state)
    }

    private func release(_ state: ResourceState) {
        let key = state.resource.key
        if state.downloads.isEmpty && (readerCounts[key] ?? 0) <= 0 {
            states[key] = nil
            readerCounts[key] = nil
        }
    }

    /// Cancels every download (shutdown).
    package func cancelAll() {
        for state in states.values {
            for download in state.downloads { download.cancel() }
        }
    }
}
