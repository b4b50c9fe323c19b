import Foundation
import Glibc
import CBenchSupport

/// A resource the load generator asks for: its request target and the
/// pattern seed and size of the file behind it (to check the bytes).
struct Target {
    var path: String
    var seed: UInt64
    var size: UInt64
}

/// One scripted request: `first == nil` asks for the whole resource,
/// `last == nil` for an open-ended range; `abandonAfter` closes the
/// connection after that many body bytes (a player seeking away).
struct Step {
    var target: Int
    var first: Int64?
    var last: Int64?
    var abandonAfter: UInt64 = 0
}

enum LoadMode {
    case randomRange(length: UInt64)
    case randomWhole
    case script([Step])
    /// `format` (one `%llu`) with each index of `indices` once, in order:
    /// distinct paths, all with targets[0]'s bytes.
    case indexSequence(format: String, indices: Range<UInt64>)
    /// Like `indexSequence`, a random index of `indices` per request until the time is up.
    case indexRandom(format: String, indices: Range<UInt64>)
}

/// What one load run measured.
struct LoadOutcome {
    var requests: UInt64
    var bodyBytes: UInt64
    var checkedBytes: UInt64
    var spotChecks: UInt64
    var errors: UInt64
    var mismatches: UInt64
    var elapsed: Double
    var timedOut: Bool
    var latencyMicros: [UInt32]
    var ttfbMicros: [UInt32]
    var stepBytes: [UInt64]
    var firstError: String

    var requestsPerSecond: Double { elapsed > 0 ? Double(requests) / elapsed : 0 }
    var megabytesPerSecond: Double { elapsed > 0 ? Double(bodyBytes) / elapsed / 1_048_576 : 0 }
    var p50: Double { Self.percentile(latencyMicros, 0.50) }
    var p99: Double { Self.percentile(latencyMicros, 0.99) }
    var ttfbP50: Double { Self.percentile(ttfbMicros, 0.50) }
    var ttfbP99: Double { Self.percentile(ttfbMicros, 0.99) }

    /// Milliseconds at the given quantile (nearest rank).
    static func percentile(_ samples: [UInt32], _ q: Double) -> Double {
        guard !samples.isEmpty else { return 0 }
        let sorted = samples.sorted()
        let rank = min(sorted.count - 1, max(0, Int((q * Double(sorted.count)).rounded(.up)) - 1))
        return Double(sorted[rank]) / 1000
    }
}

/// Runs the C load generator against 127.0.0.1:`port`. Blocks until done
/// (bounded by `timeout`). `onIdle` runs once while idle connections are held.
func runLoad(port: Int, connections: Int, targets: [Target], mode: LoadMode, duration: Double,
             timeout: Double, fullCheckEvery: UInt32, seed: UInt64 = 0x5EED,
             holdIdle: Double = 0, onIdle: (() -> Void)? = nil) -> LoadOutcome {
    // C strings for the paths must outlive the run.
    let paths = targets.map { strdup($0.path)! }
    defer { paths.forEach { free($0) } }
    var format: UnsafeMutablePointer<CChar>?
    defer { free(format) }
    var cTargets = zip(targets, paths).map { target, path in
        bs_target(path: UnsafePointer(path), seed: target.seed, size: target.size)
    }
    var steps: [bs_step] = []
    var config = bs_load_config()
    config.port = Int32(port)
    config.connections = Int32(connections)
    config.target_count = Int32(targets.count)
    config.duration_ms = UInt64(duration * 1000)
    config.timeout_ms = UInt64(timeout * 1000)
    config.seed = seed
    config.full_check_every = fullCheckEvery
    config.hold_idle_ms = UInt64(holdIdle * 1000)
    switch mode {
    case .randomRange(let length):
        config.mode = BS_MODE_RANDOM_RANGE
        config.range_len = length
    case .randomWhole:
        config.mode = BS_MODE_RANDOM_WHOLE
    case .script(let script):
        config.mode = BS_MODE_SCRIPT
        steps = script.map {
            bs_step(target: Int32($0.target), first: $0.first ?? -1, last: $0.last ?? -1, abandon_after: $0.abandonAfter)
        }
        config.step_count = Int32(steps.count)
    case .indexSequence(let pathFormat, let indices), .indexRandom(let pathFormat, let indices):
        if case .indexSequence = mode { config.mode = BS_MODE_INDEX_SEQUENCE } else { config.mode = BS_MODE_INDEX_RANDOM }
        format = strdup(pathFormat)
        config.path_format = UnsafePointer(format)
        config.index_first = indices.lowerBound
        config.index_count = UInt64(indices.count)
    }
    let idleBox = IdleBox(onIdle)
    let idleContext = Unmanaged.passRetained(idleBox).toOpaque()
    defer { Unmanaged<IdleBox>.fromOpaque(idleContext).release() }
    if onIdle != nil {
        config.on_idle = { ctx in Unmanaged<IdleBox>.fromOpaque(ctx!).takeUnretainedValue().action?() }
        config.idle_ctx = idleContext
    }

    var result = bs_load_result()
    let status = cTargets.withUnsafeMutableBufferPointer { targetBuffer in
        steps.withUnsafeMutableBufferPointer { stepBuffer in
            config.targets = UnsafePointer(targetBuffer.baseAddress)
            config.steps = UnsafePointer(stepBuffer.baseAddress)
            return bs_load_run(&config, &result)
        }
    }
    defer { bs_load_result_free(&result) }
    guard status == 0 else {
        return LoadOutcome(requests: 0, bodyBytes: 0, checkedBytes: 0, spotChecks: 0, errors: 1, mismatches: 0,
                           elapsed: 0, timedOut: false, latencyMicros: [], ttfbMicros: [], stepBytes: [],
                           firstError: "load generator refused the configuration (\(status))")
    }
    let count = result.samples
    let firstError = withUnsafeBytes(of: result.first_error) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }
    return LoadOutcome(
        requests: result.requests, bodyBytes: result.body_bytes, checkedBytes: result.checked_bytes,
        spotChecks: result.spot_checks, errors: result.errors, mismatches: result.mismatches,
        elapsed: Double(result.elapsed_ns) / 1e9, timedOut: result.timed_out != 0,
        latencyMicros: count > 0 ? Array(UnsafeBufferPointer(start: result.latency_us, count: count)) : [],
        ttfbMicros: count > 0 ? Array(UnsafeBufferPointer(start: result.ttfb_us, count: count)) : [],
        stepBytes: result.step_bytes.map { Array(UnsafeBufferPointer(start: $0, count: steps.count)) } ?? [],
        firstError: firstError)
}

private final class IdleBox {
    let action: (() -> Void)?
    init(_ action: (() -> Void)?) { self.action = action }
}

/// `runLoad` from `threads` client threads at once, the connections shared
/// out among them, merged into one outcome. One client thread cannot keep a
/// server with two loops (or two workers) busy; the load generator keeps all
/// its state per run, so runs in parallel threads are independent.
func runLoad(threads: Int, port: Int, connections: Int, targets: [Target], mode: LoadMode, duration: Double,
             timeout: Double, fullCheckEvery: UInt32) -> LoadOutcome {
    let threads = max(1, min(threads, connections))
    guard threads > 1 else {
        return runLoad(port: port, connections: connections, targets: targets, mode: mode, duration: duration,
                       timeout: timeout, fullCheckEvery: fullCheckEvery)
    }
    // One thread each, started together: the rate adds up only if they run at
    // the same time (concurrentPerform may run iterations one after another).
    let outcomes = OutcomeBox(count: threads)
    let group = DispatchGroup()
    for i in 0..<threads {
        let share = connections / threads + (i < connections % threads ? 1 : 0)
        group.enter()
        Thread.detachNewThread {
            defer { group.leave() }
            let outcome = runLoad(port: port, connections: share, targets: targets, mode: mode, duration: duration,
                                  timeout: timeout, fullCheckEvery: fullCheckEvery, seed: 0x5EED &+ UInt64(i))
            outcomes.set(i, outcome)
        }
    }
    group.wait()  // each run is bounded by its own timeout
    return outcomes.merged()
}

private final class OutcomeBox: @unchecked Sendable {
    private let lock = NSLock()
    private var outcomes: [LoadOutcome?]

    init(count: Int) { outcomes = Array(repeating: nil, count: count) }

    func set(_ i: Int, _ outcome: LoadOutcome) {
        lock.lock()
        outcomes[i] = outcome
        lock.unlock()
    }

    /// Counts add up; the elapsed time is the longest thread's (the runs started together).
    func merged() -> LoadOutcome {
        lock.lock()
        let all = outcomes.compactMap { $0 }
        lock.unlock()
        var merged = all[0]
        for other in all.dropFirst() {
            merged.requests += other.requests
            merged.bodyBytes += other.bodyBytes
            merged.checkedBytes += other.checkedBytes
            merged.spotChecks += other.spotChecks
            merged.errors += other.errors
            merged.mismatches += other.mismatches
            merged.elapsed = max(merged.elapsed, other.elapsed)
            merged.timedOut = merged.timedOut || other.timedOut
            merged.latencyMicros += other.latencyMicros
            merged.ttfbMicros += other.ttfbMicros
            if merged.firstError.isEmpty { merged.firstError = other.firstError }
        }
        return merged
    }
}
