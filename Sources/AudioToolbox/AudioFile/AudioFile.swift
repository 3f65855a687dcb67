import CAudioToolbox
import QueueCore

// Audio File Services: the C entry points of AudioToolbox/AudioFile.h, exported with @_cdecl.
// Each checks its pointers (NULL → kAudio_ParamError), finds the file object and lets
// `withStatus` turn whatever is thrown into the OSStatus returned. C `Boolean` parameters
// arrive as UInt8 (nonzero is true); the caches they control do not exist here.

// MARK: - Create, open, close

@_cdecl("AudioFileCreateWithURL")
public func audioFileCreateWithURL(_ inFileRef: __CFURLRef?, _ inFileType: AudioFileTypeID,
                            _ inFormat: UnsafePointer<AudioStreamBasicDescription>?, _ inFlags: UInt32,
                            _ outAudioFile: UnsafeMutablePointer<AudioFileID?>?) -> OSStatus {
    withStatus {
        guard let outAudioFile else { throw AudioToolboxError(kAudio_ParamError, "outAudioFile is NULL") }
        outAudioFile.pointee = nil
        guard let path = filePath(of: inFileRef) else { throw AudioToolboxError(kAudio_ParamError, "inFileRef is not a file URL") }
        guard let inFormat else { throw AudioToolboxError(kAudio_ParamError, "inFormat is NULL") }
        outAudioFile.pointee = try createAudioFile(path: path, fileType: inFileType, format: inFormat.pointee, flags: inFlags)
    }
}

@_cdecl("AudioFileOpenURL")
public func audioFileOpenURL(_ inFileRef: __CFURLRef?, _ inPermissions: Int8, _ inFileTypeHint: AudioFileTypeID,
                      _ outAudioFile: UnsafeMutablePointer<AudioFileID?>?) -> OSStatus {
    withStatus {
        guard let outAudioFile else { throw AudioToolboxError(kAudio_ParamError, "outAudioFile is NULL") }
        outAudioFile.pointee = nil
        guard let path = filePath(of: inFileRef) else { throw AudioToolboxError(kAudio_ParamError, "inFileRef is not a file URL") }
        outAudioFile.pointee = try openAudioFile(path: path, permissions: inPermissions)
    }
}

/// What AudioFileCreateWithURL does, for the C and the Swift entry points.
func createAudioFile(path: String, fileType: AudioFileTypeID, format: AudioStreamBasicDescription,
                     flags: UInt32) throws -> AudioFileID {
    let eraseFile = flags & AudioFileFlags.eraseFile.rawValue != 0
    // Compressed packets go to the containers that hold them (CAF, MPEG-4, ADTS); PCM and the
    // formats libsndfile encodes from PCM go through libsndfile.
    if PacketAudioFile.isPacketFormat(format), let container = PacketAudioFile.container(forType: fileType) {
        return AudioFileRegistry.register(try PacketAudioFile.create(path: path, fileType: fileType, in: container, format: format,
                                                                     eraseFile: eraseFile))
    }
    if PacketAudioFile.container(forType: fileType) != nil, WritableContainer(typeID: fileType) == nil {
        throw AudioToolboxError(kAudioFileUnsupportedDataFormatError,
                                "\(fourCharacterCode(fileType)) files hold compressed packets (AAC, ALAC), not this format")
    }
    return AudioFileRegistry.register(try AudioFileObject.create(path: path, fileType: fileType, format: format, eraseFile: eraseFile))
}

/// What AudioFileOpenURL does, for the C and the Swift entry points. The type is recognised
/// from the content, so the type hint is not needed: files of compressed packets (CAF of a
/// compressed format, MPEG-4, ADTS) open as packets, the others through libsndfile.
func openAudioFile(path: String, permissions: Int8) throws -> AudioFileID {
    if let container = PacketAudioFile.container(ofFileAt: path) {
        try HeaderCheck.check(path: path, forWriting: false)
        return AudioFileRegistry.register(try PacketAudioFile.open(path: path, container: container, permissions: permissions))
    }
    return AudioFileRegistry.register(try AudioFileObject.open(path: path, permissions: permissions))
}

@_cdecl("AudioFileClose")
public func audioFileClose(_ inAudioFile: AudioFileID?) -> OSStatus {
    withStatus {
        let file = try AudioFileRegistry.file(inAudioFile)
        AudioFileRegistry.unregister(inAudioFile!)
        try file.close()
    }
}

@_cdecl("AudioFileOptimize")
public func audioFileOptimize(_ inAudioFile: AudioFileID?) -> OSStatus {
    // libsndfile's files keep their audio data where it is; they are always "optimized".
    withStatus { _ = try AudioFileRegistry.file(inAudioFile) }
}

// MARK: - Packets

@_cdecl("AudioFileReadPacketData")
public func audioFileReadPacketData(_ inAudioFile: AudioFileID?, _ inUseCache: UInt8, _ ioNumBytes: UnsafeMutablePointer<UInt32>?,
                             _ outPacketDescriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?,
                             _ inStartingPacket: Int64, _ ioNumPackets: UnsafeMutablePointer<UInt32>?,
                             _ outBuffer: UnsafeMutableRawPointer?) -> OSStatus {
    readPackets(inAudioFile, ioNumBytes, outPacketDescriptions, inStartingPacket, ioNumPackets, outBuffer, endOfFile: kAudioFileEndOfFileError)
}

@_cdecl("AudioFileReadPackets")
public func audioFileReadPackets(_ inAudioFile: AudioFileID?, _ inUseCache: UInt8, _ outNumBytes: UnsafeMutablePointer<UInt32>?,
                          _ outPacketDescriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?,
                          _ inStartingPacket: Int64, _ ioNumPackets: UnsafeMutablePointer<UInt32>?,
                          _ outBuffer: UnsafeMutableRawPointer?) -> OSStatus {
    // The deprecated form: the byte count is output only (the buffer is assumed to hold the
    // packets asked for) and reaching the end of the file is not an error.
    if let outNumBytes { outNumBytes.pointee = UInt32.max }
    return readPackets(inAudioFile, outNumBytes, outPacketDescriptions, inStartingPacket, ioNumPackets, outBuffer, endOfFile: noErr)
}

/// Both packet reads.
private func readPackets(_ inAudioFile: AudioFileID?, _ ioNumBytes: UnsafeMutablePointer<UInt32>?,
                         _ outPacketDescriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?, _ inStartingPacket: Int64,
                         _ ioNumPackets: UnsafeMutablePointer<UInt32>?, _ outBuffer: UnsafeMutableRawPointer?,
                         endOfFile: OSStatus) -> OSStatus {
    var reachedEnd = false
    let status = withStatus {
        let file = try AudioFileRegistry.file(inAudioFile)
        guard let ioNumBytes, let ioNumPackets, let outBuffer else {
            throw AudioToolboxError(kAudio_ParamError, "ioNumBytes, ioNumPackets and outBuffer must not be NULL")
        }
        let read = try file.readPackets(from: inStartingPacket, count: Int(ioNumPackets.pointee),
                                        capacity: Int(ioNumBytes.pointee), into: outBuffer, descriptions: outPacketDescriptions)
        ioNumPackets.pointee = UInt32(read.packets)
        ioNumBytes.pointee = UInt32(read.bytes)
        reachedEnd = read.reachedEnd
    }
    if status != noErr {
        ioNumPackets?.pointee = 0
        ioNumBytes?.pointee = 0
    }
    return status == noErr && reachedEnd ? endOfFile : status
}

@_cdecl("AudioFileWritePackets")
public func audioFileWritePackets(_ inAudioFile: AudioFileID?, _ inUseCache: UInt8, _ inNumBytes: UInt32,
                           _ inPacketDescriptions: UnsafePointer<AudioStreamPacketDescription>?,
                           _ inStartingPacket: Int64, _ ioNumPackets: UnsafeMutablePointer<UInt32>?,
                           _ inBuffer: UnsafeRawPointer?) -> OSStatus {
    withStatus {
        let file = try AudioFileRegistry.file(inAudioFile)
        guard let ioNumPackets, let inBuffer else {
            throw AudioToolboxError(kAudio_ParamError, "ioNumPackets and inBuffer must not be NULL")
        }
        let written = try file.writePackets(at: inStartingPacket, count: Int(ioNumPackets.pointee), byteCount: Int(inNumBytes),
                                            descriptions: inPacketDescriptions, from: inBuffer)
        ioNumPackets.pointee = UInt32(written.packets)
        if let error = written.error { throw error }
    }
}

// MARK: - Bytes

@_cdecl("AudioFileReadBytes")
public func audioFileReadBytes(_ inAudioFile: AudioFileID?, _ inUseCache: UInt8, _ inStartingByte: Int64,
                        _ ioNumBytes: UnsafeMutablePointer<UInt32>?, _ outBuffer: UnsafeMutableRawPointer?) -> OSStatus {
    var reachedEnd = false
    let status = withStatus {
        let file = try AudioFileRegistry.file(inAudioFile)
        guard let ioNumBytes, let outBuffer else {
            throw AudioToolboxError(kAudio_ParamError, "ioNumBytes and outBuffer must not be NULL")
        }
        let read = try file.readBytes(from: inStartingByte, count: Int(ioNumBytes.pointee), into: outBuffer)
        ioNumBytes.pointee = UInt32(read.bytes)
        reachedEnd = read.reachedEnd
    }
    if status != noErr { ioNumBytes?.pointee = 0 }
    return status == noErr && reachedEnd ? kAudioFileEndOfFileError : status
}

@_cdecl("AudioFileWriteBytes")
public func audioFileWriteBytes(_ inAudioFile: AudioFileID?, _ inUseCache: UInt8, _ inStartingByte: Int64,
                         _ ioNumBytes: UnsafeMutablePointer<UInt32>?, _ inBuffer: UnsafeRawPointer?) -> OSStatus {
    withStatus {
        let file = try AudioFileRegistry.file(inAudioFile)
        guard let ioNumBytes, let inBuffer else {
            throw AudioToolboxError(kAudio_ParamError, "ioNumBytes and inBuffer must not be NULL")
        }
        let written = try file.writeBytes(at: inStartingByte, from: UnsafeRawBufferPointer(start: inBuffer, count: Int(ioNumBytes.pointee)))
        ioNumBytes.pointee = UInt32(written.bytes)
        if let error = written.error { throw error }
    }
}

// MARK: - Properties

@_cdecl("AudioFileGetPropertyInfo")
public func audioFileGetPropertyInfo(_ inAudioFile: AudioFileID?, _ inPropertyID: AudioFilePropertyID,
                              _ outDataSize: UnsafeMutablePointer<UInt32>?, _ isWritable: UnsafeMutablePointer<UInt32>?) -> OSStatus {
    withStatus {
        let file = try AudioFileRegistry.file(inAudioFile)
        let info = inPropertyID == kAudioFilePropertyInfoDictionary ? (size: AudioFileInfoDictionary.byteCount, isWritable: false)
            : try file.propertyInfo(inPropertyID)
        outDataSize?.pointee = UInt32(info.size)
        isWritable?.pointee = info.isWritable ? 1 : 0
    }
}

@_cdecl("AudioFileGetProperty")
public func audioFileGetProperty(_ inAudioFile: AudioFileID?, _ inPropertyID: AudioFilePropertyID,
                          _ ioDataSize: UnsafeMutablePointer<UInt32>?, _ outPropertyData: UnsafeMutableRawPointer?) -> OSStatus {
    withStatus {
        let file = try AudioFileRegistry.file(inAudioFile)
        guard let ioDataSize, let outPropertyData else {
            throw AudioToolboxError(kAudio_ParamError, "ioDataSize and outPropertyData must not be NULL")
        }
        if inPropertyID == kAudioFilePropertyInfoDictionary {
            ioDataSize.pointee = UInt32(try AudioFileInfoDictionary.store(of: file, into: outPropertyData, capacity: Int(ioDataSize.pointee)))
            return
        }
        ioDataSize.pointee = UInt32(try file.getProperty(inPropertyID, into: outPropertyData, capacity: Int(ioDataSize.pointee)))
    }
}

@_cdecl("AudioFileSetProperty")
public func audioFileSetProperty(_ inAudioFile: AudioFileID?, _ inPropertyID: AudioFilePropertyID, _ inDataSize: UInt32,
                          _ inPropertyData: UnsafeRawPointer?) -> OSStatus {
    withStatus {
        let file = try AudioFileRegistry.file(inAudioFile)
        guard let inPropertyData else { throw AudioToolboxError(kAudio_ParamError, "inPropertyData is NULL") }
        try file.setProperty(inPropertyID, from: UnsafeRawBufferPointer(start: inPropertyData, count: Int(inDataSize)))
    }
}
