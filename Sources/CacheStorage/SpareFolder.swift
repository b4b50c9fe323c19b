import CacheIO
import Dispatch
import Glibc

/// Empty data files, made ahead of need and renamed into place when a new
/// resource gets its first byte.
///
/// Creating a file takes a few hundred microseconds on ext4, and over a
/// millisecond while other writes are being synced; the first byte of a
/// cache miss would wait for it. Renaming a ready file takes tens of
/// microseconds, and it stays open across the rename, so no path is
/// opened on the loop. The folders are made on a queue of their own rather
/// than the loop's thread pool, whose queue fills with metadata fsyncs when
/// misses come fast — exactly when spares are needed.
///
/// `prepare` and `adopt` run on the loop thread; the maker queue only creates
/// files and hands them over through the mutex, never touching the loop (it
/// may outlive it). Spares left over by a stop or a crash are removed at the
/// next start.
final class SpareFolder: @unchecked Sendable {
    /// Spares kept ready: enough for a burst of new resources.
    static let stock = 4

    private struct Stock {
        var ready: [(path: String, file: DataFile)] = []
        var making = 0
    }

    private let parent: String
    private let maker = DispatchQueue(label: "httpcache.spare-folders")
    private let stockState = Locked(Stock())
    private var counter = 0  // loop thread only
    private var needsRefill = false  // loop thread only

    /// Makes spares for those taken since the last call.
    func refillIfNeeded() {
        guard needsRefill else { return }
        needsRefill = false
        prepare()
    }

    /// Names its spares with `tag` (the store's shard): the shards of one
    /// folder share `parent`, emptied by `StoreGroup` before any opens.
    private let tag: Int

    init(parent: String, tag: Int) {
        self.parent = parent
        self.tag = tag
        _ = FileIO.makeDirectory(parent)
    }

    /// Recreates the spares' folder after the cache folder was deleted and
    /// drops the spares that went with it.
    func restore() {
        _ = FileIO.makeDirectory(parent)
        stockState.withLock { $0.ready.removeAll { FileIO.fileSize($0.path) == nil } }
        prepare()
    }

    /// Starts making spares until the stock is full.
    func prepare() {
        let missing = stockState.withLock { stock in
            let missing = max(0, Self.stock - stock.ready.count - stock.making)
            stock.making += missing
            return missing
        }
        for _ in 0..<missing {
            counter += 1
            let path = parent + "/\(getpid())-\(tag)-\(counter)"
            maker.async { [weak self] in
                let file = try? DataFile(path: path)
                self?.stockState.withLock { stock in
                    stock.making -= 1
                    // A failure is not retried here: the next adopt() asks again.
                    if let file { stock.ready.append((path, file)) }
                }
            }
        }
    }

    /// Moves a spare to `path` and returns it open; nil when no spare is
    /// ready or the rename fails (the caller then creates the file itself).
    /// The stock is refilled by `refillIfNeeded()`, which the store runs
    /// once the bytes that needed the spare are on their way to the client
    /// (waking the maker costs a few microseconds on the first byte's path).
    func adopt(as path: String) -> DataFile? {
        needsRefill = true
        guard let spare = stockState.withLock({ $0.ready.popLast() }) else { return nil }
        guard rename(spare.path, path) == 0 else {
            // Still a good spare unless it is gone (the cache folder deleted).
            if errno != ENOENT { stockState.withLock { $0.ready.append(spare) } }
            return nil
        }
        return spare.file
    }
}
