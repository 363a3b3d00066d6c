/* dialects: which dialect speaks each API family (backend_internal.h
 * dialect_for). A new dialect (an API family) is added here and in
 * backend.h's enum api_family. */
#include "backend/backend_internal.h"

const struct dialect *dialect_for(enum api_family f) {
  switch (f) {
  case API_OPENAI: return &dialect_openai;
  case API_OLLAMA: return &dialect_ollama;
  case API_LLAMACPP: return &dialect_llamacpp;
  case API_AUTO: break;
  }
  return NULL;
}
