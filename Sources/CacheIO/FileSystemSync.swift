import CSupport
import Glibc

/// Syncs a whole file system (see `cs_syncfs`): blocking, for pool threads.
package enum FileSystemSync {
    /// True when every dirty page of the file system holding `fd` reached
    /// the disk; else errno is set.
    package static func sync(_ fd: Int32) -> Bool {
        let result = cs_syncfs(fd)
        if result < 0 { errno = -result }
        return result == 0
    }
}
