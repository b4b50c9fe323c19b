import CacheIO
import Dispatch
import Glibc

/// Empty data files made ahead of need, renamed into place when a new resource gets its first byte: creating
/// a file takes hundreds of microseconds on ext4 (over a millisecond during syncs), renaming an open one
/// tens. Made on a queue of their own, not the pool, whose queue fills with metadata fsyncs when misses come
/// fast. `prepare` and `adopt` run on the loop; the maker only hands files over through the mutex (it may
/// outlive the loop). The next start removes leftovers.
final class SpareFolder: @unchecked Sendable {
    static let stock = 4  // spares kept ready: enough for a burst of new resources

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

    private let tag: Int  // names its spares with `tag` (the shard): a folder's shards share `parent`

    init(parent: String, tag: Int) {
        self.parent = parent
        self.tag = tag
        _ = FileIO.makeDirectory(parent)
    }

    /// After the cache folder was deleted: the folder recreated, the spares gone with it dropped.
    func restore() {
        _ = FileIO.makeDirectory(parent)
        stockState.withLock { $0.ready.removeAll { FileIO.fileSize($0.path) == nil } }
        prepare()
    }

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

    /// Moves a spare to `path`, open; nil when none is ready or the rename fails. `refillIfNeeded()`
    /// restocks later (waking the maker costs microseconds on the first byte's path).
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
