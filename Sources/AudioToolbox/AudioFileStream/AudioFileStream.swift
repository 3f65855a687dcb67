import CAudioToolbox

// Audio File Stream Services: the C entry points of AudioToolbox/AudioFileStream.h, exported
// with @_cdecl. Docs/audiofilestream.md.

@_cdecl("AudioFileStreamOpen")
public func audioFileStreamOpen(_ inClientData: UnsafeMutableRawPointer?,
                                _ inPropertyListenerProc: AudioFileStream_PropertyListenerProc?,
                                _ inPacketsProc: AudioFileStream_PacketsProc?, _ inFileTypeHint: AudioFileTypeID,
                                _ outAudioFileStream: UnsafeMutablePointer<AudioFileStreamID?>?) -> OSStatus {
    withStatus {
        guard let outAudioFileStream else { throw AudioToolboxError(kAudio_ParamError, "outAudioFileStream is NULL") }
        outAudioFileStream.pointee = nil
        guard let inPropertyListenerProc, let inPacketsProc else {
            throw AudioToolboxError(kAudio_ParamError, "the property listener and the packets callback must not be NULL")
        }
        let stream = AudioFileStreamObject(clientData: inClientData, listener: inPropertyListenerProc, packetsProc: inPacketsProc,
                                           typeHint: inFileTypeHint)
        outAudioFileStream.pointee = AudioFileStreamObject.register(stream)
    }
}

@_cdecl("AudioFileStreamParseBytes")
public func audioFileStreamParseBytes(_ inAudioFileStream: AudioFileStreamID?, _ inDataByteSize: UInt32,
                                      _ inData: UnsafeRawPointer?, _ inFlags: AudioFileStreamParseFlags) -> OSStatus {
    withStatus {
        let stream = try AudioFileStreamObject.stream(inAudioFileStream)
        guard inData != nil || inDataByteSize == 0 else { throw AudioToolboxError(kAudio_ParamError, "inData is NULL") }
        try stream.parse(UnsafeRawBufferPointer(start: inData, count: Int(inDataByteSize)),
                         discontinuity: inFlags.contains(.discontinuity))
    }
}

@_cdecl("AudioFileStreamSeek")
public func audioFileStreamSeek(_ inAudioFileStream: AudioFileStreamID?, _ inPacketOffset: Int64,
                                _ outDataByteOffset: UnsafeMutablePointer<Int64>?,
                                _ ioFlags: UnsafeMutablePointer<AudioFileStreamSeekFlags>?) -> OSStatus {
    withStatus {
        let stream = try AudioFileStreamObject.stream(inAudioFileStream)
        guard let outDataByteOffset, let ioFlags else { throw AudioToolboxError(kAudio_ParamError, "outDataByteOffset and ioFlags must not be NULL") }
        let found = try stream.seek(toPacket: inPacketOffset)
        outDataByteOffset.pointee = found.offset
        ioFlags.pointee = found.estimated ? .offsetIsEstimated : []
    }
}

@_cdecl("AudioFileStreamGetPropertyInfo")
public func audioFileStreamGetPropertyInfo(_ inAudioFileStream: AudioFileStreamID?, _ inPropertyID: AudioFileStreamPropertyID,
                                           _ outPropertyDataSize: UnsafeMutablePointer<UInt32>?,
                                           _ outWritable: UnsafeMutablePointer<UInt8>?) -> OSStatus {
    withStatus {
        let stream = try AudioFileStreamObject.stream(inAudioFileStream)
        let size = try stream.propertySize(inPropertyID)
        outPropertyDataSize?.pointee = UInt32(size)
        outWritable?.pointee = 0
    }
}

@_cdecl("AudioFileStreamGetProperty")
public func audioFileStreamGetProperty(_ inAudioFileStream: AudioFileStreamID?, _ inPropertyID: AudioFileStreamPropertyID,
                                       _ ioPropertyDataSize: UnsafeMutablePointer<UInt32>?,
                                       _ outPropertyData: UnsafeMutableRawPointer?) -> OSStatus {
    withStatus {
        let stream = try AudioFileStreamObject.stream(inAudioFileStream)
        guard let ioPropertyDataSize, let outPropertyData else {
            throw AudioToolboxError(kAudio_ParamError, "ioPropertyDataSize and outPropertyData must not be NULL")
        }
        let written = try stream.getProperty(inPropertyID, into: outPropertyData, capacity: Int(ioPropertyDataSize.pointee))
        ioPropertyDataSize.pointee = UInt32(written)
    }
}

@_cdecl("AudioFileStreamSetProperty")
public func audioFileStreamSetProperty(_ inAudioFileStream: AudioFileStreamID?, _ inPropertyID: AudioFileStreamPropertyID,
                                       _ inPropertyDataSize: UInt32, _ inPropertyData: UnsafeRawPointer?) -> OSStatus {
    withStatus {
        let stream = try AudioFileStreamObject.stream(inAudioFileStream)
        guard inPropertyData != nil else { throw AudioToolboxError(kAudio_ParamError, "inPropertyData is NULL") }
        // Apple's parsers take no property from the caller (FrameToPacket and its kind are
        // read through GetProperty); a known property is read-only, an unknown one unsupported.
        _ = try stream.propertySize(inPropertyID)
        throw AudioToolboxError(kAudioFileStreamError_IllegalOperation, "\(fourCharacterCode(inPropertyID)) is read-only")
    }
}

@_cdecl("AudioFileStreamClose")
public func audioFileStreamClose(_ inAudioFileStream: AudioFileStreamID?) -> OSStatus {
    withStatus {
        _ = try AudioFileStreamObject.stream(inAudioFileStream)
        AudioFileStreamObject.unregister(inAudioFileStream!)
    }
}
