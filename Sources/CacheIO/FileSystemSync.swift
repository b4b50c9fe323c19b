import CSupport
import Glibc

/// Blocking, for pool threads.
package enum FileSystemSync {
    /// Every dirty page of `fd`'s file system reached the disk; else errno is set.
    package static func sync(_ fd: Int32) -> Bool {
        let result = cs_syncfs(fd)
        if result < 0 { errno = -result }
        return result == 0
    }
}
