//! tf.train.Example records as columns.
