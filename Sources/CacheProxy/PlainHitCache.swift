import CacheHTTP
import CacheIO
import CacheLoading
import CacheStorage

/// One loop's copies of plain hits (see PlainHit). The owning loop makes its own on a key's first
/// plain request of a second; another loop asks the owner (concurrent askers share the answer) and
/// sends its hits' touches back in batches, so the LRU order stays right. A "no" is not remembered:
/// that request goes to the owner's loop. Loop thread only.
final class PlainHitCache {
    /// Copies kept at most. Each holds its data file open (an extra descriptor once the store closed its
    /// own): three quarters of the store's cap, the rest is for responses in flight.
    let maxEntries: Int
    /// Bytes of small bodies (`memoryObjectLimit` at most each) kept with their copies: a hit of one
    /// is one send of head and body. A copy lives for one second of the store's clock, so this tier
    /// is refilled from the page cache and never outlives a change of its resource. 2 MiB: with
    /// 8 MiB the peak RSS of 1,000 distinct 16 KiB objects at random rose from 19.6 to 28.9 MB, for
    /// hits that cost about the same CPU.
    let memoryBudget: Int
    static let memoryObjectLimit = ExchangeStateMachine.sharedPacketMax
    private var memoryBytes = 0

    private let epoch: StoreEpoch
    private let loop: EventLoop
    /// The store's clock: a copy is current for the second it was made in.
    private let clock: @Sendable () -> Int64
    private var entries: [String: PlainHit] = [:]
    /// The key last found and its copy: one object asked for again and again (ranges of one video)
    /// skips hashing its 64-character key (~600 instructions a hit). Cleared by every change of `entries`.
    private var recent: (key: String, hit: PlainHit)?
    private var asking: [String: [(PlainHit?) -> Void]] = [:]
    private var touched: [Int: (owner: LoopLink, keys: Set<String>)] = [:]
    private var tick: Deadline?
    private var tickArmed = false

    init(epoch: StoreEpoch, loop: EventLoop, maxEntries: Int, memoryBudget: Int = 2 << 20,
         clock: @escaping @Sendable () -> Int64) {
        self.epoch = epoch
        self.loop = loop
        self.clock = clock
        self.maxEntries = max(1, maxEntries)
        self.memoryBudget = max(0, memoryBudget)
    }

    /// GET or HEAD whose cache directives cannot change the owner's answer.
    static func isPlain(_ head: HTTPRequestHead) -> Bool {
        !head.headers.contains("Cache-Control") && !head.headers.contains("Pragma")
    }

    private func now() -> Int64 { clock() / 1000 }

    func lookup(_ key: String) -> PlainHit? {
        let hit: PlainHit
        if let recent, recent.key == key {
            hit = recent.hit
        } else {
            guard let found = entries[key] else { return nil }
            hit = found
            recent = (key, found)
        }
        if hit.isCurrent(second: now(), epoch: epoch.current) { return hit }
        entries[key] = nil
        recent = nil
        memoryBytes -= hit.body?.count ?? 0
        return nil
    }

    /// Asks `owner` for its plain hit; `answer` runs here with it (nil: hand over). `back` is this loop's.
    func ask(url: OriginURL, key: String, owner: LoopLink, from back: LoopLink,
             _ answer: @escaping (PlainHit?) -> Void) {
        if asking[key]?.append(answer) != nil { return }
        asking[key] = [answer]
        send(url: url, key: key, owner: owner, from: back, again: false)
    }

    private func send(url: OriginURL, key: String, owner: LoopLink, from back: LoopLink, again: Bool) {
        let sent = owner.run { server in
            let hit = server.plainHit(url: url, storeKey: key)
            back.run { $0.plainHits.answered(key: key, hit, url: url, owner: owner, from: back, again: again) }
        }
        if !sent { answered(key: key, nil, url: url, owner: owner, from: back, again: true) }
    }

    func answered(key: String, _ hit: PlainHit?, url: OriginURL, owner: LoopLink, from back: LoopLink, again: Bool) {
        let usable = hit.flatMap { $0.isCurrent(second: now(), epoch: epoch.current) ? $0 : nil }
        // A copy that went stale on the way (a second ended, something changed): ask once more.
        if hit != nil && usable == nil && !again {
            return send(url: url, key: key, owner: owner, from: back, again: true)
        }
        let kept = usable.map { keep(key, $0) }
        let waiting = asking.removeValue(forKey: key) ?? []
        for answer in waiting { answer(kept) }
    }

    /// Keeps a current copy, with its body in memory when small, not encrypted and the budget has room.
    @discardableResult
    func keep(_ key: String, _ hit: PlainHit) -> PlainHit {
        recent = nil
        if let old = entries.removeValue(forKey: key) {
            memoryBytes -= old.body?.count ?? 0
        } else if entries.count >= maxEntries {
            // One copy out for each one in, the first in hash order (the tick drops stale ones).
            // Dropping all at once made a working set past the cap rebuild a copy for most of its hits.
            let out = entries.remove(at: entries.startIndex)
            memoryBytes -= out.value.body?.count ?? 0
        }
        var kept = hit
        if hit.body == nil, memoryBytes + Self.memoryObjectLimit <= memoryBudget,
           let loaded = hit.withBody(limit: Self.memoryObjectLimit) {
            kept = loaded
        }
        memoryBytes += kept.body?.count ?? 0
        entries[key] = kept
        armTick()
        return kept
    }

    /// A hit of another loop's resource answered here: its owner (shard `index`) hears of it within a second.
    func served(_ key: String, owner index: Int, _ owner: LoopLink) {
        touched[index, default: (owner, [])].keys.insert(key)
        armTick()
    }

    private func armTick() {
        guard !tickArmed else { return }
        tickArmed = true
        if let tick {
            tick.reset(milliseconds: 1000)
        } else {
            tick = Deadline(on: loop, after: 1000) { [unowned self] in self.tock() }  // ours: no side table
        }
    }

    func close() {
        tick?.cancel()
        tick = nil
        recent = nil
        entries.removeAll()
        memoryBytes = 0
    }

    private func dropStale() {
        recent = nil
        let second = now()
        let current = epoch.current
        entries = entries.filter { $0.value.isCurrent(second: second, epoch: current) }
        memoryBytes = entries.values.reduce(0) { $0 + ($1.body?.count ?? 0) }
    }

    /// Once a second: touches go to owners, stale copies are dropped, the tick re-arms while any remain.
    private func tock() {
        tickArmed = false
        for (_, batch) in touched {
            let keys = Array(batch.keys)
            batch.owner.run { $0.touch(keys) }
        }
        touched.removeAll()
        dropStale()
        if !entries.isEmpty { armTick() }
    }
}
