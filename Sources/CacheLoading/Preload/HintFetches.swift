import CacheHTTP
import CacheStorage

/// What became of a player's hint (CMCD `nor`/`nrr`).
package enum HintOutcome: String, Sendable, CaseIterable {
    /// Queued for a background fetch.
    case queued
    /// Already cached whole, or already being fetched for a hint.
    case known
    /// Too many hints wait already: dropped.
    case dropped
}

/// Background fetches of what players say they fetch next (CMCD `nor`/`nrr`): each a `PreloadFetch` queued
/// first of all (`Priority.hint`), under every background limit. A hint in flight is not fetched twice; past
/// `maxPending` new ones are dropped. Loop thread only.
final class HintFetches: PreloadFetchOwner {
    private unowned let preloader: Preloader
    /// In flight or waiting for a slot, by URL and range.
    private var pending: [String: PreloadFetch] = [:]
    private var nextID = 0
    /// Hints waiting or running at once, at most.
    static let maxPending = 32

    init(preloader: Preloader) { self.preloader = preloader }

    /// `clientFields`, `separateEntry`: see `PreloadItem`.
    func fetch(_ hint: CMCDHint, clientFields: HTTPHeaders?, separateEntry: Bool) -> HintOutcome {
        let url = hint.url.string
        let item = PreloadItem(id: nextID + 1, url: url, range: hint.range, role: .segment, clientFields: clientFields,
                               separateEntry: separateEntry)
        let name = (hint.range.map { "\(url) \($0.lowerBound)-\($0.upperBound)" } ?? url) + (separateEntry ? " apart" : "")
        guard pending[name] == nil, !isCached(item, range: hint.range) else { return .known }
        guard pending.count < Self.maxPending else { return .dropped }
        nextID += 1
        let fetch = PreloadFetch(item: item, run: self)
        pending[name] = fetch
        preloader.enqueue(fetch, priority: .hint)
        return .queued
    }

    /// This shard holds the bytes already (another shard's: the fetch finds them).
    private func isCached(_ item: PreloadItem, range: Range<Int64>?) -> Bool {
        let engine = preloader.engine
        if let group = engine.group, group.shard(ofURL: item.url) != engine.store.shardIndex { return false }
        guard let resource = engine.store.existing(storeKey: PreloadRead.storeKey(of: item, engine: engine)) else { return false }
        return resource.isComplete || range.map { resource.available.covers($0) } ?? false
    }

    func cancelAll() {
        for fetch in pending.values {
            fetch.cancel()
            preloader.fetchGone(fetch)
        }
        pending.removeAll()
    }

    func fetchEnded(_ fetch: PreloadFetch, _ outcome: Result<[UInt8]?, PreloadFailure>, finalURL: String?) {
        guard let name = pending.first(where: { $0.value === fetch })?.key else { return }
        pending[name] = nil
        preloader.fetchGone(fetch)
        preloader.hintEnded(fetch.item.url, outcome)
    }
}
