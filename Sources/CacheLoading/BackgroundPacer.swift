import CacheIO

/// Paces the origin downloads that only background readers (downloads,
/// preloads) want: under the rate cap (`--download-rate`, shared out over
/// the loops; 0: none) and held while a foreground reader is served, so a
/// player gets the link first. A held download's upstream task is paused
/// and looked at again every `tick`. Loop thread only.
final class BackgroundPacer {
    /// Bytes per second this loop's background downloads may take; 0: no cap.
    var rate: Int64
    private let loop: EventLoop
    private let gauge: () -> ReaderGauge
    /// Bytes that may still be taken now (negative: owed), refilled at `rate`.
    private var allowance: Double = 0
    private var refilledAt: UInt64
    private var held: [ObjectIdentifier: Download] = [:]
    private var timer: LoopTimer?
    static let tickMilliseconds: UInt64 = 20

    init(loop: EventLoop, rate: Int64, gauge: @escaping () -> ReaderGauge) {
        self.loop = loop
        self.rate = rate
        self.gauge = gauge
        refilledAt = loop.nowMilliseconds
    }

    /// `download` (started by a background reader) stored `count` bytes.
    func received(_ count: Int, by download: Download) {
        if rate > 0 {
            refill()
            allowance -= Double(count)
        }
        if mustHold(download) { hold(download) }
    }

    private func mustHold(_ download: Download) -> Bool {
        // A player waiting on the same bytes makes it the player's download.
        if download.state.waiting.values.contains(where: { !$0.background }) { return false }
        return (rate > 0 && allowance < 0) || !gauge().isIdle
    }

    private func refill() {
        let now = loop.nowMilliseconds
        let elapsed = Double(now &- refilledAt) / 1000
        refilledAt = now
        // At most a quarter second of burst: the cap holds over short spans too.
        allowance = min(Double(rate) / 4, allowance + elapsed * Double(rate))
    }

    private func hold(_ download: Download) {
        held[ObjectIdentifier(download)] = download
        download.setHeld(true)
        guard timer == nil else { return }
        timer = LoopTimer(on: loop, after: Self.tickMilliseconds, repeat: Self.tickMilliseconds) { [weak self] in self?.tick() }
    }

    private func tick() {
        if rate > 0 { refill() }
        for (key, download) in held where download.finished || !mustHold(download) {
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
