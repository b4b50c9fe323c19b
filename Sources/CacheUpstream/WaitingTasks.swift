/// A first-in, first-out queue of tasks waiting for an origin connection:
/// an array read from a moving head, compacted once half of it is spent.
struct WaitingTasks {
    private var tasks: [UpstreamTask] = []
    private var head = 0

    var count: Int { tasks.count - head }
    var isEmpty: Bool { head == tasks.count }
    var first: UpstreamTask? { isEmpty ? nil : tasks[head] }

    mutating func append(_ task: UpstreamTask) { tasks.append(task) }

    mutating func removeFirst() {
        guard !isEmpty else { return }
        head += 1
        if head == tasks.count {
            tasks.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 && head * 2 >= tasks.count {
            tasks.removeFirst(head)
            head = 0
        }
    }

    mutating func removeAll() {
        tasks.removeAll()
        head = 0
    }
}
