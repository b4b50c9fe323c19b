/// The knobs of one benchmark run (defaults: the scenarios at full size).
struct Settings {
    var duration = 3.0          // seconds of load per measurement
    var warmup = 1.0            // seconds of load before measuring, per server
    var rounds = 5              // measurements per server, servers alternating; the median is reported
    var bigSize: UInt64 = 100 << 20
    var rangeLength: UInt64 = 64 << 10
    var smallSize: UInt64 = 16 << 10
    var smallCount = 256
    var hitConnections = 32
    var streamConnections = 4
    var herdClients = 32
    var idleConnections = 1000
    var idleHold = 2.0
    var coldRequests = 100      // cold ranged requests for time to first byte
    var coldWholeRequests = 3   // cold whole-resource downloads for throughput
    var coldOriginRate: UInt64 = 200 << 20 // bytes/s of the paced origin for scenario 4's throughput
    var seekOriginRate: UInt64 = 50 << 20  // bytes/s of the paced origin in scenario 7
    /// Scenario 11: entries filled into the cache (distinct URLs of one 4 KiB body).
    var entries = 1_000_000
    /// Scenario 11: keep-alive connections filling and hitting the cache.
    var scaleConnections = 32
    /// Scenario 11: misses timed at the end of the fill and when the cache is full.
    var scaleSample = 5_000
    /// Scenario 20: a modelled player of an HLS title, with and without `--prefetch`.
    var prefetchSegments = 10
    var prefetchSegmentSeconds = 2.0
    var prefetchBitrate: UInt64 = 2 << 20      // bytes/s of the stream
    var prefetchOriginRate: UInt64 = 4 << 20   // bytes/s per origin connection (above the bitrate)
    var prefetchLatency = 0.150                // seconds to the origin's first byte
    /// Scenarios 15 and 17: distinct whole objects of the reverse-proxy comparison.
    var peerSmallCount = 1_000
    var peerLargeCount = 100
    var peerLargeSize: UInt64 = 1 << 20
    var peerLargeConnections = 8
    var scenarios: Set<Int> = Set(1...17).union([20])

    /// Tiny sizes and durations: proves the binaries work (the test suite's smoke run).
    static var smoke: Settings {
        var s = Settings()
        s.duration = 0.3
        s.warmup = 0.1
        s.rounds = 1
        s.bigSize = 4 << 20
        s.smallCount = 8
        s.idleConnections = 50
        s.idleHold = 0.2
        s.coldRequests = 5
        s.coldWholeRequests = 1
        s.seekOriginRate = 64 << 20
        s.coldOriginRate = 64 << 20
        s.entries = 5_000
        s.scaleSample = 1_000
        s.prefetchSegments = 5
        s.prefetchSegmentSeconds = 0.5
        s.prefetchBitrate = 1 << 20
        s.prefetchLatency = 0.05
        s.peerSmallCount = 20
        s.peerLargeCount = 4
        return s
    }

    var description: [String: String] {
        [
            "duration_s": String(duration), "warmup_s": String(warmup), "rounds": String(rounds),
            "big_MiB": String(Double(bigSize) / 1_048_576), "small_KiB": String(smallSize >> 10),
            "small_files": String(smallCount), "idle_connections": String(idleConnections),
            "seek_origin_MBps": String(Double(seekOriginRate) / 1_048_576),
            "cold_origin_MBps": String(Double(coldOriginRate) / 1_048_576),
            "entries": String(entries),
        ]
    }
}
