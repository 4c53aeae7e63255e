"""zps.distributed"""
