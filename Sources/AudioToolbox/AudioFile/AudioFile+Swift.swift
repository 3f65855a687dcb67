import CAudioToolbox
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The Swift faces of the two functions that take a CFURLRef in C. On Apple platforms Swift
// passes a `CFURL`; here `CFURL` is Foundation's `URL`, so `url as CFURL` code compiles unchanged.
// They share their implementation with the C entry points.

/// Creates a new audio file (or, with `.eraseFile`, replaces an existing one) of type
/// `inFileType` holding data in `inFormat`, and opens it for writing.
///
/// - Returns: noErr, or 'typ?' for a type that cannot be written, 'fmt?' for a format the type
///   cannot hold, dupFNErr (-48) when the file exists without `.eraseFile`,
///   kAudioFileFileNotFoundError (-43) when the directory does not exist,
///   kAudio_FilePermissionError (-54), kAudio_BadFilePathError ('!pth').
@discardableResult  // like every C function Swift imports, so ported code compiles without warnings
public func AudioFileCreateWithURL(_ inFileRef: CFURL, _ inFileType: AudioFileTypeID,
                                   _ inFormat: UnsafePointer<AudioStreamBasicDescription>, _ inFlags: AudioFileFlags,
                                   _ outAudioFile: UnsafeMutablePointer<AudioFileID?>) -> OSStatus {
    withStatus {
        outAudioFile.pointee = nil
        let path = try fileSystemPath(inFileRef)
        outAudioFile.pointee = try createAudioFile(path: path, fileType: inFileType, format: inFormat.pointee, flags: inFlags.rawValue)
    }
}

/// Opens an existing audio file for reading, writing or both. The type is recognised from
/// the file's content; `inFileTypeHint` may be 0.
///
/// - Returns: noErr, or kAudioFileFileNotFoundError (-43), kAudio_FilePermissionError (-54),
///   kAudio_BadFilePathError ('!pth') for a directory, 'dta?' for a damaged file of a known
///   type, 'typ?' for content of no known type.
@discardableResult
public func AudioFileOpenURL(_ inFileRef: CFURL, _ inPermissions: AudioFilePermissions, _ inFileTypeHint: AudioFileTypeID,
                             _ outAudioFile: UnsafeMutablePointer<AudioFileID?>) -> OSStatus {
    withStatus {
        outAudioFile.pointee = nil
        outAudioFile.pointee = try openAudioFile(path: try fileSystemPath(inFileRef), permissions: inPermissions.rawValue)
    }
}

func fileSystemPath(_ url: URL) throws -> String {
    guard url.isFileURL else { throw AudioToolboxError(kAudio_ParamError, "\(url) is not a file URL") }
    return url.withUnsafeFileSystemRepresentation { $0.map { String(cString: $0) } } ?? url.path
}
