import CacheIO

/// The rate cap of background downloads (`--download-rate`) for all loops: a token
/// bucket refilled at `rate` a second of the cache's clock. Thread-safe.
package final class RateBucket: Sendable {
    /// Bytes per second (0: no cap), bytes that may be taken now (negative: owed), and when.
    private let state: Locked<(rate: Int64, allowance: Double, at: Int64)>
    private let clock: @Sendable () -> Int64

    package init(rate: Int64, clock: @escaping @Sendable () -> Int64 = { WallClock.milliseconds() }) {
        self.clock = clock
        state = Locked((rate, 0, clock()))
    }

    /// Bytes per second; 0: no cap. Set again by a configuration reload.
    package var rate: Int64 {
        get { state.withLock { $0.rate } }
        set { state.withLock { $0.rate = newValue } }
    }

    /// Takes `count` bytes (0: just looks); whether the bucket is then in debt.
    @discardableResult
    func take(_ count: Int) -> Bool {
        return state.withLock { state in
            let rate = state.rate
            guard rate > 0 else { return false }
            let now = clock()
            // At most a quarter second of burst: the cap holds over short spans too.
            // A clock set back gives nothing (and takes nothing).
            state.allowance = min(Double(rate) / 4, state.allowance + Double(max(0, now - state.at)) / 1000 * Double(rate))
            state.at = now
            state.allowance -= Double(count)
            return state.allowance < 0
        }
    }
}

/// Paces origin downloads only background readers want: under the rate cap, and held
/// while a player's own download runs on any shard (the player gets the link first). A
/// held task is paused and looked at every `tickMilliseconds`. Loop thread only.
final class BackgroundPacer {
    /// The cap shared by every loop (set by EngineGroup); none until then.
    var bucket = RateBucket(rate: 0)
    private let loop: EventLoop
    private let gauge: () -> ReaderGauge
    private var held: [ObjectIdentifier: Download] = [:]
    private var timer: LoopTimer?
    static let tickMilliseconds: UInt64 = 20

    init(loop: EventLoop, gauge: @escaping () -> ReaderGauge) {
        self.loop = loop
        self.gauge = gauge
    }

    /// `download` (started by a background reader) stored `count` bytes.
    func received(_ count: Int, by download: Download) {
        let inDebt = bucket.take(count)
        if mustHold(download, inDebt: inDebt) { hold(download) }
    }

    private func mustHold(_ download: Download, inDebt: Bool) -> Bool {
        // A player waiting on the same bytes makes it the player's download.
        if download.state.waiting.values.contains(where: { !$0.background }) { return false }
        return inDebt || gauge().isDownloading
    }

    private func hold(_ download: Download) {
        held[ObjectIdentifier(download)] = download
        download.setHeld(true)
        guard timer == nil else { return }
        timer = LoopTimer(on: loop, after: Self.tickMilliseconds, repeat: Self.tickMilliseconds) { [weak self] in self?.tick() }
    }

    private func tick() {
        let inDebt = bucket.take(0)
        for (key, download) in held where download.finished || !mustHold(download, inDebt: inDebt) {
            held[key] = nil
            download.setHeld(false)
        }
        if held.isEmpty {
            timer?.cancel()
            timer = nil
        }
    }

    /// Lets every held download go (shutdown).
    func releaseAll() {
        for download in held.values { download.setHeld(false) }
        held.removeAll()
        timer?.cancel()
        timer = nil
    }
}
