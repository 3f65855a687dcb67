@_exported import CAudioToolbox
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The CoreFoundation subset as Swift code written for Apple platforms sees it.
//
// CF objects (CFRunLoop, CFString) come from the real CoreFoundation in the
// toolchain's libFoundation and are imported as classes, as on Apple
// platforms. `CFURL` is Foundation's `URL`, so `url as CFURL` compiles;
// the C entry points that take a CFURLRef are refined below.

/// A file URL. On Apple platforms `URL` bridges to `CFURL`; here they are the same type.
public typealias CFURL = URL

/// The default allocator (`nil`), as `kCFAllocatorDefault` is on Apple platforms.
public var kCFAllocatorDefault: CFAllocator? { nil }

/// Creates a file URL from a file system path of `bufLen` bytes.
public func CFURLCreateFromFileSystemRepresentation(
    _ allocator: CFAllocator?, _ buffer: UnsafePointer<UInt8>?, _ bufLen: CFIndex, _ isDirectory: Bool
) -> CFURL? {
    guard let buffer, bufLen >= 0 else { return nil }
    let path = String(decoding: UnsafeBufferPointer(start: buffer, count: bufLen), as: UTF8.self)
    return URL(fileURLWithPath: path, isDirectory: isDirectory)
}

/// Writes a URL's file system path, NUL-terminated, into `buffer`; false if it does not fit.
public func CFURLGetFileSystemRepresentation(
    _ url: CFURL, _ resolveAgainstBase: Bool, _ buffer: UnsafeMutablePointer<UInt8>, _ maxBufLen: CFIndex
) -> Bool {
    let bytes = Array(url.path.utf8)
    guard bytes.count < maxBufLen else { return false }
    bytes.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress!, count: bytes.count) }
    buffer[bytes.count] = 0
    return true
}

/// Swift code ported from Apple platforms reads `DarwinBoolean` out-parameters
/// (AudioQueueGetCurrentTime's discontinuity flag); here `Boolean` is `Bool`.
public typealias DarwinBoolean = Bool

extension Bool {
    /// The value itself, so `darwinBoolean.boolValue` compiles as on Apple platforms.
    public var boolValue: Bool { self }
}

/// The file system path a C caller's CFURLRef names.
func filePath(of url: __CFURLRef?) -> String? {
    guard let url else { return nil }
    var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
    guard __CFURLGetFileSystemRepresentation(url, true, &buffer, CFIndex(buffer.count)) else { return nil }
    let length = buffer.firstIndex(of: 0) ?? buffer.count
    return String(decoding: buffer[..<length], as: UTF8.self)
}

// CFString and String: on Apple platforms `"text" as CFString` and `string as String`
// bridge; without Objective-C bridging these do the same.

extension CFString {
    /// A CFString with the text of `string` (Apple platforms: `string as CFString`).
    public static func make(_ string: String) -> CFString {
        CFStringCreateWithCString(nil, string, CFStringEncoding(kCFStringEncodingUTF8))!
    }
}

extension String {
    /// The text of a CFString (Apple platforms: `cfString as String`).
    public init(_ cfString: CFString) {
        var buffer = [CChar](repeating: 0, count: Swift.max(4 * CFStringGetLength(cfString) + 1, 1))
        let ok = CFStringGetCString(cfString, &buffer, buffer.count, CFStringEncoding(kCFStringEncodingUTF8))
        let bytes = ok ? buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) } : []
        self = String(decoding: bytes, as: UTF8.self)
    }
}
