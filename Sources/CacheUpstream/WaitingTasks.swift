/// Tasks waiting for an origin connection, earliest deadline first, ties in arrival order. A player's CMCD
/// `dl` (time until its buffer runs dry) sends the request closest to stalling first; one without is due
/// `defaultDelay` after it came, so never passed over longer. A binary heap: log n a task.
typealias WaitingTasks = WaitingQueue<UpstreamTask>

/// The queue of `WaitingTasks`, of any element (tests use plain values).
struct WaitingQueue<Element> {
    /// Milliseconds after arrival a task without a deadline of its own is due.
    static var defaultDelay: UInt64 { 10_000 }

    private struct Entry {
        var due: UInt64
        var order: UInt64
        var task: Element

        func precedes(_ other: Entry) -> Bool { due != other.due ? due < other.due : order < other.order }
    }

    private var heap: [Entry] = []
    private var arrivals: UInt64 = 0

    var count: Int { heap.count }
    var isEmpty: Bool { heap.isEmpty }
    var first: Element? { heap.first?.task }

    /// `task` arrived at `now` (loop ms) and must start within `deadline` ms, if given.
    mutating func append(_ task: Element, now: UInt64, deadline: UInt64? = nil) {
        arrivals += 1
        heap.append(Entry(due: now &+ (deadline ?? Self.defaultDelay), order: arrivals, task: task))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func removeFirst() {
        guard !heap.isEmpty else { return }
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var best = parent
            if left < heap.count && heap[left].precedes(heap[best]) { best = left }
            if right < heap.count && heap[right].precedes(heap[best]) { best = right }
            guard best != parent else { return }
            heap.swapAt(parent, best)
            parent = best
        }
    }
}
