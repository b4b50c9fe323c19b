import CacheIO

/// Writes metadata off the loop in batches, one at a time (a sync for the data, one for the metadata):
/// a burst of new entries costs a few syncs, not two each. `done` judges outcomes. Loop thread only.
final class MetadataFlusher {
    static let batchSize = 256

    private var queue: [Resource] = []
    private var batchInFlight = false
    private let root: String
    private let loop: EventLoop
    private let done: (Resource, ResourceMetadata, MetadataWrite.Outcome) -> Void

    init(root: String, loop: EventLoop,
         done: @escaping (Resource, ResourceMetadata, MetadataWrite.Outcome) -> Void) {
        self.root = root
        self.loop = loop
        self.done = done
    }

    /// Queues the resource's metadata (once: `flushQueued`).
    func enqueue(_ resource: Resource) {
        guard !resource.flushQueued else { return }
        resource.flushQueued = true
        queue.append(resource)
        startBatch()
    }

    /// Forgets what waits (shutdown writes everything itself).
    func dropQueued() { queue.removeAll() }

    private func startBatch() {
        guard !batchInFlight, !queue.isEmpty else { return }
        let batch = Array(queue.prefix(Self.batchSize))
        queue.removeFirst(batch.count)
        var items: [MetadataWrite] = []
        var taken: [Resource] = []
        for resource in batch {
            resource.flushQueued = false
            guard resource.needsFlush, !resource.isTransient, !resource.isRemoved else { continue }
            resource.flushing = true
            resource.needsFlush = false
            resource.unflushedBytes = 0
            items.append(resource.pendingWrite())
            taken.append(resource)
        }
        guard !items.isEmpty else { return startBatch() }
        batchInFlight = true
        let (root, temp, writes) = (self.root, self.root + "/tmp", items)
        loop.offload({ MetadataWrite.perform(writes, root: root, tempFolder: temp) }, done: { [weak self] outcomes in
            guard let self else { return }
            self.batchInFlight = false
            for (position, resource) in taken.enumerated() {
                self.done(resource, items[position].metadata, outcomes[position])
            }
            self.startBatch()
        })
    }
}
