#!/bin/bash
#PBS -l naccelerators=abc
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
