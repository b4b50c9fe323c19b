import CacheHTTP
import CacheIO
import CacheStorage

/// One download: a title (URL and selection) kept until removed, with where it stands.
/// Persisted (`DownloadFolder`), sent by the admin routes (Codable) and shown by the API.
package struct DownloadRecord: Codable, Sendable, Equatable {
    package enum State: String, Codable, Sendable, CaseIterable {
        case queued, running, paused, completed, failed, removed
    }

    /// Short and unique in the folder (hex).
    package var id: String
    /// The title's name (`--name`); the URL's last path segment by default.
    package var name: String
    package var url: String
    /// HLS variants: all, highest, lowest or a BANDWIDTH; nil: all.
    package var variant: String?
    /// HLS: seconds of media per media playlist; nil: all.
    package var duration: Double?
    /// Bytes of a plain resource, "START-END" inclusive; nil: all.
    package var range: String?
    package var state: State = .queued
    package var failure: HTTPCacheError?
    /// Body bytes done (read from the cache or fetched) in the current run.
    package var bytesDone: Int64 = 0
    /// Exact once every size is known, else an estimate (`totalIsEstimate`); nil: none known.
    package var bytesTotal: Int64?
    package var totalIsEstimate = false
    package var resourcesDone = 0
    package var resourcesTotal = 0
    package var segmentsDone = 0
    package var segmentsTotal = 0
    /// Milliseconds since 1970 when it was added (orders the list).
    package var created: Int64

    /// What pins its resources: released, and its resources deleted, when it is removed.
    package var holder: String { Self.holder(of: id) }
    /// The pin holder of download `id` (what purge by download looks for).
    package static func holder(of id: String) -> String { "download:" + id }

    /// The preload that fetches it (nil when the selection is not valid).
    package var preloadRequest: PreloadRequest? {
        var request = PreloadRequest(url: url, duration: duration)
        if let variant {
            guard let variants = PreloadRequest.parseVariants(variant) else { return nil }
            request.variants = variants
        }
        if let range {
            guard let bytes = PreloadRequest.parseRange(range) else { return nil }
            request.range = bytes
        }
        request.pinTag = holder
        return request
    }

    /// The checked selection: nil when fine, else what is wrong.
    package var problem: String? {
        if OriginURL.parse(url) == nil { return "not an http or https URL: \(url)" }
        if let variant, PreloadRequest.parseVariants(variant) == nil { return "bad variant \(variant)" }
        if let range, PreloadRequest.parseRange(range) == nil { return "bad range \(range)" }
        if let duration, !(duration > 0 && duration.isFinite) { return "bad duration \(duration)" }
        return nil
    }

    package static func defaultName(for url: String) -> String {
        let path = url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
        let last = path.split(separator: "/").last.map(String.init) ?? url
        return last.isEmpty ? url : last
    }

    /// Bytes it needs in the cache: its total (or so far) and each resource's allowance.
    package var neededBytes: Int64 {
        (bytesTotal ?? bytesDone) + Int64(resourcesTotal) * StoreGroup.entryOverhead
    }
}
