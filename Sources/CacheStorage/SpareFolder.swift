import CacheIO
import Glibc

/// A resource folder with an empty data file, made ahead of need on the
/// thread pool and renamed into place when a new resource gets its first byte.
///
/// Creating a folder and a file takes a few hundred microseconds on ext4 (far
/// more while other writes are being synced), and the first byte of a cache
/// miss waits for it; renaming a ready folder takes tens of microseconds.
/// The data file stays open across the rename, so no path is opened on the
/// loop. Loop thread only; a spare left over by a crash is removed at start.
final class SpareFolder {
    private let parent: String
    private let loop: EventLoop
    private var ready: (directory: String, file: DataFile)?
    private var preparing = false
    private var counter = 0

    init(parent: String, loop: EventLoop) {
        self.parent = parent
        self.loop = loop
        FileIO.removeTree(parent)
        _ = FileIO.makeDirectory(parent)
    }

    /// Starts making a spare if none is ready or under way.
    func prepare() {
        guard ready == nil, !preparing else { return }
        preparing = true
        counter += 1
        let directory = parent + "/\(getpid())-\(counter)"
        loop.offload({ () -> DataFile? in
            guard FileIO.makeDirectory(directory) else { return nil }
            return try? DataFile(path: directory + "/data")
        }, done: { [self] file in
            preparing = false
            if let file { ready = (directory, file) }
        })
    }

    /// Moves the spare to `directory` (which must not exist yet) and returns its
    /// open data file, now at `directory/data`; nil when no spare is ready or the
    /// rename fails (the caller then creates the folder itself).
    func adopt(as directory: String) -> DataFile? {
        guard let spare = ready else { return nil }
        guard rename(spare.directory, directory) == 0 else { return nil }
        ready = nil
        prepare()
        return spare.file
    }
}
