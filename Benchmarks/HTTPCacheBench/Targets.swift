/// The targets of issue #15 ("Performance, wave 2"), judged on the figures of
/// one run. Kept in one place so the table, the JSON and BENCHMARKS.md agree.
enum Targets {
    /// Scenarios 1, 2 (one loop vs one worker) and 8, 9 (two vs two): hits.
    static let hitOverDirect = 1.05
    static let hitOverSlice = 1.2
    /// Scenario 3: streaming a whole 100 MiB resource from the cache.
    static let streamOverDirect = 0.95
    static let streamOverSlice = 1.0
    /// Issue #34 (was #24's 0.8 for both): 64 KiB hits and streaming from an
    /// encrypted folder against a plain one. A hit's ceiling is about 0.45 on
    /// CPU (two copies and the cipher against one sendfile): BENCHMARKS.md.
    static let encryptedHitsOverPlain = 0.5
    static let encryptedStreamingOverPlain = 0.8
    static func encryptedOverPlain(streaming: Bool) -> Double {
        streaming ? encryptedStreamingOverPlain : encryptedHitsOverPlain
    }
    /// Scenario 4: milliseconds a cold miss may add to the median time to first byte.
    static let coldTTFBAddedMs = 0.3
    /// Scenario 4 (wave 1, kept): paced cold throughput over fetching from the origin.
    static let coldOverDirect = 0.9
    /// Scenario 5: origin bytes over the resource size, 32 clients on one cold resource.
    static let herdOriginOverSize = 1.05
    /// Scenario 7: origin bytes over the distinct bytes the player read.
    static let seekOriginOverUsed = 1.05
    /// Issue #34, scenarios 15–17 (reverse proxy, each server on one core):
    /// whole objects over Varnish, 64 KiB ranges over Varnish, 16 KiB objects
    /// over nginx serving the files itself, proxy-URL ranges over nginx direct.
    static let wholeOverVarnish = 1.0
    static let rangesOverVarnish = 1.1
    static let smallOverNginx = 0.9
    static let proxyURLRangesOverDirect = 1.05
    /// Memory of the proxy (MB = MiB of RSS).
    static let idleRSSMB = 16.0
    static let hitRSSMB = 24.0
    static let idleConnectionsRSSMB = 24.0
    /// Scenario 11 (issue #28): seconds from spawn to a correct hit of an old entry.
    static let scaleFirstHitSeconds = 1.0
    /// Scenario 11: RSS at rest after a restart, per entry beyond the empty base.
    static let scaleBytesPerEntry = 128.0
    /// Scenario 11: a rate at N entries (or full) over the same rate with few entries (empty).
    static let scaleSameCost = 0.9

    /// `value ≥ bound`; no value (a peer or a figure missing) is "not measured".
    static func atLeast(_ description: String, _ value: Double?, _ bound: Double, unmeasured: String? = nil) -> TargetCheck {
        TargetCheck(description: description, value: value, met: value.map { $0 >= bound }, reason: unmeasured)
    }

    /// `value ≤ bound`; no value is "not measured".
    static func atMost(_ description: String, _ value: Double?, _ bound: Double, unmeasured: String? = nil) -> TargetCheck {
        TargetCheck(description: description, value: value, met: value.map { $0 <= bound }, reason: unmeasured)
    }

    /// A target that could not be measured in this run, and why.
    static func unmeasured(_ description: String, because reason: String) -> TargetCheck {
        TargetCheck(description: description, value: nil, met: nil, reason: reason)
    }
}

/// A target of the issue, judged on this run's figures.
struct TargetCheck: Codable {
    var description: String
    var value: Double?
    /// nil: not measured (see `reason`).
    var met: Bool?
    /// "PASS", "MISS" or "not measured" (stored, so the JSON carries it).
    var verdict: String
    /// Why it was not measured, when it was not.
    var reason: String?

    init(description: String, value: Double?, met: Bool?, reason: String? = nil) {
        self.description = description
        self.value = value
        self.met = met
        self.verdict = met.map { $0 ? "PASS" : "MISS" } ?? "not measured"
        self.reason = met == nil ? (reason ?? "a figure or a peer is missing") : nil
    }
}

/// How many targets passed, missed or could not be measured.
struct TargetSummary: Codable {
    var pass = 0
    var miss = 0
    var notMeasured = 0

    init(_ targets: [TargetCheck]) {
        for target in targets {
            switch target.met {
            case true?: pass += 1
            case false?: miss += 1
            case nil: notMeasured += 1
            }
        }
    }

    var text: String { "\(pass) PASS, \(miss) MISS, \(notMeasured) not measured" }
}
