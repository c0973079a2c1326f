use alloc::vec;
use alloc::vec::Vec;
use bijou_codec::{Reader, Wire, WriteError, Writer};
use bytes::BufMut;

use super::super::{
    fields::{sorted_unique, write_ids},
    MessageError, Topic,
};

/// ```
/// use bijou_frame::proto::message::{Topic, Topics};
/// let topics = Topics::new([Topic::new([2; 32]), Topic::new([1; 32]), Topic::new([2; 32])]).unwrap();
/// assert_eq!(topics.as_slice(), &[Topic::new([1; 32]), Topic::new([2; 32])]);
/// assert!(Topics::new([]).is_none());
/// ```
///
/// The non-empty topic list of the control messages
/// (Subscribe, Unsubscribe, SubscribeRejected).
///
/// ```text
///   +-------------------+------------------------------+
///   | Count u16 BE (>=1)| Count x Topic 32 (distinct)  |
///   +-------------------+------------------------------+
/// ```
///
/// A count of 0 is refused ([`MessageError::EmptyList`]), and so is a topic
/// listed twice ([`ReadError::Duplicate`](bijou_codec::ReadError)).
/// Subduction sends topic lists in its callers' order, and re-subscribes
/// new peers in hash-set order, so decoding accepts distinct topics in any
/// order and keeps the wire order: accepted bytes still re-encode exactly.
/// [`Topics::new`] sorts, so what we write is canonical. More than 65,535
/// topics cannot be encoded (an error, never a truncated count).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Topics(Vec<Topic>);

impl Topics {
    /// The topics, sorted and deduplicated; `None` if there are none (the
    /// wire cannot carry an empty list).
    #[must_use]
    pub fn new(topics: impl IntoIterator<Item = Topic>) -> Option<Self> {
        let topics = sorted_unique(topics);
        (!topics.is_empty()).then_some(Self(topics))
    }

    /// A list of one topic.
    #[must_use]
    pub fn one(topic: Topic) -> Self {
        Self(vec![topic])
    }

    /// The topics: ascending if built with [`Topics::new`], in wire order
    /// if decoded.
    #[must_use]
    pub fn as_slice(&self) -> &[Topic] {
        &self.0
    }

    /// How many (at least one).
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Always `false`: the list is never empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Iterates over the topics.
    pub fn iter(&self) -> core::slice::Iter<'_, Topic> {
        self.0.iter()
    }
}

impl<'a> IntoIterator for &'a Topics {
    type Item = &'a Topic;
    type IntoIter = core::slice::Iter<'a, Topic>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl From<Topic> for Topics {
    fn from(topic: Topic) -> Self {
        Self::one(topic)
    }
}

impl Wire for Topics {
    type Error = MessageError;

    fn write_to<B: BufMut + ?Sized>(&self, w: &mut Writer<'_, B>) -> Result<(), WriteError> {
        w.count_u16("topics", self.0.len())?;
        write_ids(w, &self.0);
        Ok(())
    }

    fn read_from(r: &mut Reader<'_>) -> Result<Self, MessageError> {
        let offset = r.offset();
        let count = r.u16("topic_count")?;
        if count == 0 {
            return Err(MessageError::EmptyList {
                field: "topics",
                offset,
            });
        }
        let topics = r.distinct_arrays::<32>("topics", count.into())?;
        Ok(Self(topics.into_iter().map(Topic::new).collect()))
    }
}
