import CacheHTTP
import CacheLoading

/// Players' CMCD (CTA-5004), counted per response; at most `maxSessions` session ids and `maxContents`
/// content ids kept (then "other" or overflow). Loop-confined.
package struct CMCDMetrics: Sendable, Equatable {
    /// Upper bounds of the buffer-length histogram, in milliseconds.
    package static let bufferBounds: [Int64] = [500, 1000, 2000, 4000, 8000, 15000, 30000, 60000]
    package static let maxSessions = 10_000
    package static let maxContents = 100
    /// The content id the ones past `maxContents` are counted under.
    package static let otherContent = "other"

    package struct Content: Sendable, Equatable {
        package var requests: UInt64 = 0
        package var rebuffers: UInt64 = 0
    }

    package private(set) var requests: UInt64 = 0
    /// Requests whose CMCD had a key dropped (unknown, of the wrong type, too long).
    package private(set) var malformed: UInt64 = 0
    /// `bs` reported.
    package private(set) var rebuffers: UInt64 = 0
    /// Buffer lengths by bucket (`bufferBounds`, then +Inf), not cumulative.
    package private(set) var bufferBuckets = [UInt64](repeating: 0, count: bufferBounds.count + 1)
    package private(set) var bufferSum: UInt64 = 0
    /// `mtp` (kbps).
    package private(set) var throughputSum: UInt64 = 0
    package private(set) var throughputCount: UInt64 = 0
    /// `br` (kbps).
    package private(set) var bitrateSum: UInt64 = 0
    package private(set) var bitrateCount: UInt64 = 0
    /// By `ot` (m, a, v, av, i, c, tt, k, o).
    package private(set) var byObjectType: [String: UInt64] = [:]
    /// Session ids seen (at most `maxSessions`); `sessionsOverflow` when more came.
    package private(set) var sessions: Set<String> = []
    package private(set) var sessionsOverflow = false
    package private(set) var contents: [String: Content] = [:]
    package private(set) var hints: [HintOutcome: UInt64] = [:]

    package mutating func record(_ cmcd: CMCD) {
        requests += 1
        if cmcd.malformed > 0 { malformed += 1 }
        let starved = cmcd.flag(.bufferStarvation)
        if starved { rebuffers += 1 }
        if let length = cmcd.integer(.bufferLength), length >= 0 {
            let bucket = Self.bufferBounds.firstIndex { length <= $0 } ?? Self.bufferBounds.count
            bufferBuckets[bucket] += 1
            bufferSum &+= UInt64(length)
        }
        if let mtp = cmcd.integer(.measuredThroughput), mtp >= 0 {
            throughputSum &+= UInt64(mtp)
            throughputCount += 1
        }
        if let br = cmcd.integer(.bitrate), br >= 0 {
            bitrateSum &+= UInt64(br)
            bitrateCount += 1
        }
        if let type = cmcd.string(.objectType) { byObjectType[type, default: 0] += 1 }
        if let sid = cmcd.string(.sessionID) { noteSession(sid) }
        if let cid = cmcd.string(.contentID) {
            let name = contentName(cid)
            contents[name, default: Content()].requests += 1
            if starved { contents[name, default: Content()].rebuffers += 1 }
        }
    }

    /// `cid` while fewer than `maxContents` are counted, else `otherContent`.
    private func contentName(_ cid: String) -> String {
        contents[cid] != nil || contents.count < Self.maxContents ? cid : Self.otherContent
    }

    private mutating func noteSession(_ sid: String) {
        guard !sessions.contains(sid) else { return }
        if sessions.count < Self.maxSessions { sessions.insert(sid) } else { sessionsOverflow = true }
    }

    package mutating func hint(_ outcome: HintOutcome) { hints[outcome, default: 0] += 1 }

    package var bufferCount: UInt64 { bufferBuckets.reduce(0, &+) }

    package mutating func add(_ other: CMCDMetrics) {
        requests &+= other.requests
        malformed &+= other.malformed
        rebuffers &+= other.rebuffers
        for index in bufferBuckets.indices { bufferBuckets[index] &+= other.bufferBuckets[index] }
        bufferSum &+= other.bufferSum
        throughputSum &+= other.throughputSum
        throughputCount &+= other.throughputCount
        bitrateSum &+= other.bitrateSum
        bitrateCount &+= other.bitrateCount
        byObjectType.merge(other.byObjectType, uniquingKeysWith: &+)
        for sid in other.sessions { noteSession(sid) }
        sessionsOverflow = sessionsOverflow || other.sessionsOverflow
        for (cid, figures) in other.contents {
            let name = contentName(cid)
            contents[name, default: Content()].requests &+= figures.requests
            contents[name, default: Content()].rebuffers &+= figures.rebuffers
        }
        hints.merge(other.hints, uniquingKeysWith: &+)
    }

    // MARK: rendering

    /// Each upper bound (`bound`'s text, then "+Inf") with the count at or below it.
    private func cumulativeBuckets(_ bound: (Int64) -> String) -> [(String, UInt64)] {
        var cumulative: UInt64 = 0
        return bufferBuckets.enumerated().map { index, count in
            cumulative &+= count
            return (index < Self.bufferBounds.count ? bound(Self.bufferBounds[index]) : "+Inf", cumulative)
        }
    }

    func json(hintsFetched: UInt64, hintsFailed: UInt64) -> String {
        func object(_ pairs: [(String, String)]) -> String {
            "{" + pairs.map { JSONText.string($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
        }
        let buckets = cumulativeBuckets { String($0) }.map { ($0.0, String($0.1)) }
        let perContent = contents.sorted { $0.key < $1.key }.map {
            ($0.key, object([("requests", String($0.value.requests)), ("rebuffers", String($0.value.rebuffers))]))
        }
        return object([
            ("requests", String(requests)),
            ("malformed", String(malformed)),
            ("rebuffers", String(rebuffers)),
            ("players", String(sessions.count)),
            ("players_overflow", sessionsOverflow ? "true" : "false"),
            ("buffer_length_ms", object([("count", String(bufferCount)), ("sum", String(bufferSum)), ("le", object(buckets))])),
            ("throughput_kbps", object([("count", String(throughputCount)), ("sum", String(throughputSum))])),
            ("bitrate_kbps", object([("count", String(bitrateCount)), ("sum", String(bitrateSum))])),
            ("by_object_type", object(byObjectType.sorted { $0.key < $1.key }.map { ($0.key, String($0.value)) })),
            ("by_content", object(perContent)),
            ("hints", object(HintOutcome.allCases.map { ($0.rawValue, String(hints[$0, default: 0])) }
                + [("fetched", String(hintsFetched)), ("failed", String(hintsFailed))])),
        ])
    }

    func prometheus(into text: inout PrometheusText, hintsFetched: UInt64, hintsFailed: UInt64) {
        text.family("httpcache_cmcd_requests_total", .counter, "Responses to requests carrying CMCD (CTA-5004).",
                    String(requests))
        text.family("httpcache_cmcd_malformed_total", .counter,
                    "Requests whose CMCD had a key dropped (unknown, of the wrong type, or a payload too long).",
                    String(malformed))
        text.family("httpcache_cmcd_rebuffers_total", .counter, "Buffer starvations players reported (CMCD bs).",
                    String(rebuffers))
        text.family("httpcache_cmcd_players", .gauge,
                    "Distinct player sessions seen (CMCD sid; at most \(Self.maxSessions) are remembered).",
                    String(sessions.count))
        text.histogram("httpcache_cmcd_buffer_length_seconds", "Players' buffer length at their requests (CMCD bl).",
                       buckets: cumulativeBuckets { MetricsSnapshot.decimal(Double($0) / 1000, digits: 1) },
                       sum: MetricsSnapshot.decimal(Double(bufferSum) / 1000, digits: 3), count: bufferCount)
        text.family("httpcache_cmcd_throughput_kbps_total", .counter, "Sum of the throughput players measured (CMCD mtp, kbps).",
                    String(throughputSum))
        text.family("httpcache_cmcd_throughput_samples_total", .counter, "Requests that carried CMCD mtp.",
                    String(throughputCount))
        text.family("httpcache_cmcd_bitrate_kbps_total", .counter, "Sum of the encoded bitrates asked for (CMCD br, kbps).",
                    String(bitrateSum))
        text.family("httpcache_cmcd_bitrate_samples_total", .counter, "Requests that carried CMCD br.", String(bitrateCount))
        text.family("httpcache_cmcd_object_requests_total", .counter, "Requests by object type (CMCD ot).",
                    byObjectType.sorted { $0.key < $1.key }.map { (["type": $0.key], String($0.value)) })
        text.family("httpcache_cmcd_content_requests_total", .counter,
                    "Requests by content id (CMCD cid; at most \(Self.maxContents), then \"other\").",
                    contents.sorted { $0.key < $1.key }.map { (["cid": $0.key], String($0.value.requests)) })
        text.family("httpcache_cmcd_content_rebuffers_total", .counter, "Buffer starvations by content id (CMCD cid, bs).",
                    contents.sorted { $0.key < $1.key }.map { (["cid": $0.key], String($0.value.rebuffers)) })
        text.family("httpcache_cmcd_hints_total", .counter,
                    "Next-object hints (CMCD nor, nrr) by what became of them: queued, known (cached or in flight), dropped.",
                    HintOutcome.allCases.map { (["outcome": $0.rawValue], String(hints[$0, default: 0])) })
        text.family("httpcache_cmcd_hint_fetches_total", .counter, "Hinted objects fetched in the background, by result.",
                    [(["result": "fetched"], String(hintsFetched)), (["result": "failed"], String(hintsFailed))])
    }
}
