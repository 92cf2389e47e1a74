/* Placeholder so a folder with no sources yet still forms an OBJECT library. */
typedef int fr_empty_translation_unit;
