import CAudioToolbox
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The CoreFoundation calls ported Swift code makes around Audio Toolbox, as on Apple platforms
// (the C declarations taking a CFURLRef are refined for Swift: here `CFURL` is `URL`).

/// Creates a file URL from a path held in a CFString. Only `.cfurlposixPathStyle` is taken
/// (others give nil); a relative path is taken from the current directory.
public func CFURLCreateWithFileSystemPath(_ allocator: CFAllocator?, _ filePath: CFString, _ pathStyle: CFURLPathStyle,
                                          _ isDirectory: Bool) -> CFURL? {
    guard pathStyle == .cfurlposixPathStyle else { return nil }
    return URL(fileURLWithPath: String(filePath), isDirectory: isDirectory)
}
