/// An object behind one of the C API's opaque pointers: retained when handed out, released when freed.
protocol OpaqueHandle: AnyObject {}

extension OpaqueHandle {
    /// The object behind `pointer` (nil for NULL), still owned by the pointer.
    static func from(_ pointer: OpaquePointer?) -> Self? {
        pointer.map { Unmanaged<Self>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
    }

    /// A pointer that owns a reference to this object until `release(_:)`.
    var retainedPointer: OpaquePointer { OpaquePointer(Unmanaged.passRetained(self).toOpaque()) }

    /// Gives up the pointer's reference; the object it was (nil for NULL).
    @discardableResult
    static func release(_ pointer: OpaquePointer?) -> Self? {
        pointer.map { Unmanaged<Self>.fromOpaque(UnsafeRawPointer($0)).takeRetainedValue() }
    }
}
