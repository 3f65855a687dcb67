import CAudioToolbox
import QueueCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// Extended Audio File Services: the C entry points of AudioToolbox/ExtendedAudioFile.h,
// exported with @_cdecl, and the Swift faces of the two that take a CFURL. Each checks its
// pointers (NULL → kAudio_ParamError), finds the object and lets `withStatus` turn what is
// thrown into the OSStatus returned.

/// The ExtAudioFile objects alive in this process.
enum ExtAudioFileRegistry {
    private static let live = LiveObjects<ExtAudioFileObject>()

    static func add(_ object: ExtAudioFileObject) -> ExtAudioFileRef {
        live.add(object, as: object.ref)
        return object.ref
    }

    static func remove(_ ref: ExtAudioFileRef?) throws -> ExtAudioFileObject {
        let object = try object(ref)
        live.remove(object.ref)
        return object
    }

    /// The live object behind `ref`, nil if none (no Error made: ExtAudioFileWriteAsync's look-up).
    static func lookUp(_ ref: ExtAudioFileRef) -> ExtAudioFileObject? { live.object(ref) }

    static func object(_ ref: ExtAudioFileRef?) throws -> ExtAudioFileObject {
        guard let ref, let object = live.object(ref) else {
            throw AudioToolboxError(kAudio_ParamError, "not a live ExtAudioFileRef")
        }
        return object
    }
}

/// ExtAudioFileOpenURL's work, for the C and the Swift entry points.
func openExtAudioFile(path: String) throws -> ExtAudioFileRef {
    let file = try openAudioFile(path: path, permissions: AudioFilePermissions.readPermission.rawValue)
    do {
        return ExtAudioFileRegistry.add(try ExtAudioFileObject.wrap(file, forWriting: false, ownsFile: true))
    } catch {
        _ = audioFileClose(file)
        throw error
    }
}

/// ExtAudioFileCreateWithURL's work, for the C and the Swift entry points.
func createExtAudioFile(path: String, fileType: AudioFileTypeID, format: UnsafePointer<AudioStreamBasicDescription>?,
                        layout: UnsafePointer<AudioChannelLayout>?, flags: UInt32) throws -> ExtAudioFileRef {
    guard let format else { throw AudioToolboxError(kAudio_ParamError, "inStreamDesc is NULL") }
    var layoutBytes: [UInt8]?
    if let layout {
        let value = try ChannelLayoutValue(bytes: UnsafeRawBufferPointer(start: layout, count: layoutSize(layout)))
        guard value.channelCount == Int(format.pointee.mChannelsPerFrame) else {
            throw AudioToolboxError(kExtAudioFileError_InvalidChannelMap, "the layout has \(value.channelCount) channels, the format \(format.pointee.mChannelsPerFrame)")
        }
        layoutBytes = value.layoutBytes
    }
    return ExtAudioFileRegistry.add(try ExtAudioFileObject.create(path: path, fileType: fileType, format: format.pointee,
                                                                  layout: layoutBytes, flags: flags))
}

/// The size of a caller's AudioChannelLayout: its header and its descriptions.
private func layoutSize(_ layout: UnsafePointer<AudioChannelLayout>) -> Int {
    let count = layout.pointee.mChannelLayoutTag == kAudioChannelLayoutTag_UseChannelDescriptions
        ? Int(min(layout.pointee.mNumberChannelDescriptions, 1024)) : 0
    return ChannelLayoutValue.headerSize + count * ChannelLayoutValue.descriptionSize
}

@_cdecl("ExtAudioFileOpenURL")
public func extAudioFileOpenURL(_ inURL: __CFURLRef?, _ outExtAudioFile: UnsafeMutablePointer<ExtAudioFileRef?>?) -> OSStatus {
    withStatus {
        guard let outExtAudioFile else { throw AudioToolboxError(kAudio_ParamError, "outExtAudioFile is NULL") }
        outExtAudioFile.pointee = nil
        guard let path = filePath(of: inURL) else { throw AudioToolboxError(kAudio_ParamError, "inURL is not a file URL") }
        outExtAudioFile.pointee = try openExtAudioFile(path: path)
    }
}

@_cdecl("ExtAudioFileWrapAudioFileID")
public func extAudioFileWrapAudioFileID(_ inFileID: AudioFileID?, _ inForWriting: UInt8,
                                        _ outExtAudioFile: UnsafeMutablePointer<ExtAudioFileRef?>?) -> OSStatus {
    withStatus {
        guard let outExtAudioFile else { throw AudioToolboxError(kAudio_ParamError, "outExtAudioFile is NULL") }
        outExtAudioFile.pointee = nil
        _ = try AudioFileRegistry.file(inFileID)
        outExtAudioFile.pointee = ExtAudioFileRegistry.add(try ExtAudioFileObject.wrap(inFileID!, forWriting: inForWriting != 0, ownsFile: false))
    }
}

@_cdecl("ExtAudioFileCreateWithURL")
public func extAudioFileCreateWithURL(_ inURL: __CFURLRef?, _ inFileType: AudioFileTypeID,
                                      _ inStreamDesc: UnsafePointer<AudioStreamBasicDescription>?,
                                      _ inChannelLayout: UnsafePointer<AudioChannelLayout>?, _ inFlags: UInt32,
                                      _ outExtAudioFile: UnsafeMutablePointer<ExtAudioFileRef?>?) -> OSStatus {
    withStatus {
        guard let outExtAudioFile else { throw AudioToolboxError(kAudio_ParamError, "outExtAudioFile is NULL") }
        outExtAudioFile.pointee = nil
        guard let path = filePath(of: inURL) else { throw AudioToolboxError(kAudio_ParamError, "inURL is not a file URL") }
        outExtAudioFile.pointee = try createExtAudioFile(path: path, fileType: inFileType, format: inStreamDesc,
                                                         layout: inChannelLayout, flags: inFlags)
    }
}

@_cdecl("ExtAudioFileDispose")
public func extAudioFileDispose(_ inExtAudioFile: ExtAudioFileRef?) -> OSStatus {
    withStatus { try ExtAudioFileRegistry.remove(inExtAudioFile).dispose() }
}

@_cdecl("ExtAudioFileRead")
public func extAudioFileRead(_ inExtAudioFile: ExtAudioFileRef?, _ ioNumberFrames: UnsafeMutablePointer<UInt32>?,
                             _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    withStatus {
        let object = try ExtAudioFileRegistry.object(inExtAudioFile)
        guard let ioNumberFrames, let ioData else { throw AudioToolboxError(kAudio_ParamError, "ioNumberFrames or ioData is NULL") }
        let wanted = Int(ioNumberFrames.pointee)
        ioNumberFrames.pointee = 0
        ioNumberFrames.pointee = UInt32(try object.read(wanted, into: ioData))
    }
}

@_cdecl("ExtAudioFileWrite")
public func extAudioFileWrite(_ inExtAudioFile: ExtAudioFileRef?, _ inNumberFrames: UInt32,
                              _ ioData: UnsafePointer<AudioBufferList>?) -> OSStatus {
    withStatus {
        let object = try ExtAudioFileRegistry.object(inExtAudioFile)
        guard let ioData else { throw AudioToolboxError(kAudio_ParamError, "ioData is NULL") }
        try object.write(Int(inNumberFrames), from: ioData)
    }
}

@_cdecl("ExtAudioFileWriteAsync")
public func extAudioFileWriteAsync(_ inExtAudioFile: ExtAudioFileRef?, _ inNumberFrames: UInt32,
                                   _ ioData: UnsafePointer<AudioBufferList>?) -> OSStatus {
    // The realtime path: the registry's look-up (a dictionary read under its short lock, so a
    // stale ref is kAudio_ParamError, not a crash), then no other lock and no throw (an Error
    // allocates).
    guard let ref = inExtAudioFile, let object = ExtAudioFileRegistry.lookUp(ref) else { return kAudio_ParamError }
    return object.writeAsync(Int(inNumberFrames), from: ioData)
}

@_cdecl("ExtAudioFileSeek")
public func extAudioFileSeek(_ inExtAudioFile: ExtAudioFileRef?, _ inFrameOffset: Int64) -> OSStatus {
    withStatus { try ExtAudioFileRegistry.object(inExtAudioFile).seek(to: inFrameOffset) }
}

@_cdecl("ExtAudioFileTell")
public func extAudioFileTell(_ inExtAudioFile: ExtAudioFileRef?, _ outFrameOffset: UnsafeMutablePointer<Int64>?) -> OSStatus {
    withStatus {
        let object = try ExtAudioFileRegistry.object(inExtAudioFile)
        guard let outFrameOffset else { throw AudioToolboxError(kAudio_ParamError, "outFrameOffset is NULL") }
        try object.settleAsyncWrites()
        outFrameOffset.pointee = object.currentFrame
    }
}

@_cdecl("ExtAudioFileGetPropertyInfo")
public func extAudioFileGetPropertyInfo(_ inExtAudioFile: ExtAudioFileRef?, _ inPropertyID: ExtAudioFilePropertyID,
                                        _ outSize: UnsafeMutablePointer<UInt32>?, _ outWritable: UnsafeMutablePointer<UInt8>?) -> OSStatus {
    withStatus {
        let info = try ExtAudioFileRegistry.object(inExtAudioFile).propertyInfo(inPropertyID)
        outSize?.pointee = info.size
        outWritable?.pointee = info.writable ? 1 : 0
    }
}

@_cdecl("ExtAudioFileGetProperty")
public func extAudioFileGetProperty(_ inExtAudioFile: ExtAudioFileRef?, _ inPropertyID: ExtAudioFilePropertyID,
                                    _ ioPropertyDataSize: UnsafeMutablePointer<UInt32>?, _ outPropertyData: UnsafeMutableRawPointer?) -> OSStatus {
    withStatus {
        let object = try ExtAudioFileRegistry.object(inExtAudioFile)
        guard let ioPropertyDataSize, let outPropertyData else {
            throw AudioToolboxError(kAudio_ParamError, "ioPropertyDataSize or outPropertyData is NULL")
        }
        try object.getProperty(inPropertyID, ioPropertyDataSize, outPropertyData)
    }
}

@_cdecl("ExtAudioFileSetProperty")
public func extAudioFileSetProperty(_ inExtAudioFile: ExtAudioFileRef?, _ inPropertyID: ExtAudioFilePropertyID,
                                    _ inPropertyDataSize: UInt32, _ inPropertyData: UnsafeRawPointer?) -> OSStatus {
    withStatus { try ExtAudioFileRegistry.object(inExtAudioFile).setProperty(inPropertyID, inPropertyDataSize, inPropertyData) }
}

// MARK: - Swift

/// Opens an existing audio file for reading in a client format (ExtAudioFileOpenURL).
@discardableResult
public func ExtAudioFileOpenURL(_ inURL: CFURL, _ outExtAudioFile: UnsafeMutablePointer<ExtAudioFileRef?>) -> OSStatus {
    withStatus {
        outExtAudioFile.pointee = nil
        outExtAudioFile.pointee = try openExtAudioFile(path: try fileSystemPath(inURL))
    }
}

/// Creates a new audio file written from a client format (ExtAudioFileCreateWithURL).
@discardableResult
public func ExtAudioFileCreateWithURL(_ inURL: CFURL, _ inFileType: AudioFileTypeID, _ inStreamDesc: UnsafePointer<AudioStreamBasicDescription>,
                                      _ inChannelLayout: UnsafePointer<AudioChannelLayout>?, _ inFlags: UInt32,
                                      _ outExtAudioFile: UnsafeMutablePointer<ExtAudioFileRef?>) -> OSStatus {
    withStatus {
        outExtAudioFile.pointee = nil
        outExtAudioFile.pointee = try createExtAudioFile(path: try fileSystemPath(inURL), fileType: inFileType, format: inStreamDesc,
                                                         layout: inChannelLayout, flags: inFlags)
    }
}
