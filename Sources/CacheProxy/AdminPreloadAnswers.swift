import CacheIO
import CacheLoading

/// `POST /admin/preload`'s answer.
package struct AdminPreloadStarted: Codable, Sendable {
    package var id: Int
}

/// `GET /admin/preload?id=N`'s answer: `state` is running, done or failed (with its `HTTPCacheError`).
package struct AdminPreloadStatus: Codable, Sendable {
    package var id: Int
    package var url: String
    package var state: String
    package var failure: HTTPCacheError?
    package var bytesDone: Int64
    package var bytesTotal: Int64?
    package var segmentsDone: Int
    package var segmentsTotal: Int
    package var resourcesDone: Int
    package var resourcesTotal: Int
    /// A live DASH manifest: what was available when it was read.
    package var live: Bool?

    init(_ status: PreloadStatus) {
        id = status.id
        url = status.url
        switch status.phase {
        case .running: state = "running"
        case .finished(nil): state = "done"
        case .finished(let failure?):
            state = "failed"
            self.failure = HTTPCacheError(HTTPCacheError.Code(rawValue: failure.code) ?? .upstream, failure.message)
        }
        bytesDone = status.bytesDone
        bytesTotal = status.bytesTotal
        segmentsDone = status.counts.segmentsDone
        segmentsTotal = status.counts.segmentsTotal
        resourcesDone = status.counts.resourcesDone
        resourcesTotal = status.counts.resourcesTotal
        live = status.counts.live
    }
}
